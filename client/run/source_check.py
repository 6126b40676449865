"""Warnings, early in a run, when the server does not offer an acceptance source (naming the flag).

Counters are checked at the start, from the first scrape; the engine's per-request statistics
after the first phase (warmup or the first load point), from its records, since only a response
shows them. The flags per engine are in its spec (``speedbench/engines/<name>.py``).
"""
from __future__ import annotations

from speedbench import engines
from speedbench.metrics.acceptance.counter_sources import counter_acceptance


def counter_warnings(engine: str, metrics_path: str | None, snapshot) -> list[str]:
    """Why the ``counters`` source will be missing (empty when it is there or the engine has none)."""
    flags = _source_flags(engine)
    if flags is None or metrics_path is None:
        return []
    if snapshot is None:
        return [f"no Prometheus metrics at {metrics_path}: the counters source is missing "
                f"(server needs: {flags['counters']})"]
    if counter_acceptance(engine, snapshot.totals, {}) is None:
        return [f"{metrics_path} has no speculative-decoding counters: the counters source is missing "
                f"(if the server speculates, it needs: {flags['counters']})"]
    return []


def request_stats_warnings(engine: str, records) -> list[str]:
    """Why the ``engine`` source is missing from these records (empty when every one has exact stats)."""
    flags = _source_flags(engine)
    ok = [r for r in records if r.ok]
    if flags is None or not ok:
        return []
    exact = [r for r in ok if r.engine_stats is not None and r.engine_stats.exact]
    if len(exact) == len(ok):
        return []
    return [f"{len(ok) - len(exact)} of {len(ok)} responses carry no exact per-request speculative statistics: "
            f"acceptance falls back to chunks (if the server speculates, it needs: {flags['engine']})"]


def _source_flags(engine: str) -> dict[str, str] | None:
    """The server flag each acceptance source of ``engine`` needs (its spec), None for an unknown engine."""
    spec = engines.REGISTRY.get(engine)
    return dict(spec.source_flags) if spec is not None and spec.source_flags else None
