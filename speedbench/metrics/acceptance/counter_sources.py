"""Engine Prometheus counters -> run-level acceptance counts (the "counters" source).

What each engine's counters count (from their source; ``docs/engine-wire-formats.md``):

- vLLM ``vllm:spec_decode_num_drafts_total``: *drafted* steps (n-gram steps without a draft are
  not counted); ``..._num_draft_tokens_total``, ``..._num_accepted_tokens_total`` (drafts accepted
  past ``max_tokens`` included), ``..._num_accepted_tokens_per_pos_total{position}``;
- llama.cpp ``llamacpp:spec_decode_num_drafts_total`` = ``n_draft_verif_steps`` (drafted steps),
  draft / accepted token totals, per-position counts (server started with ``--metrics``);
- SGLang ``sglang:spec_verify_calls_total`` (every decode step verifies) and
  ``sglang:generation_tokens_total`` (server started with ``--enable-metrics``);
- TensorRT-LLM ``trtllm_spec_decode_num_draft_tokens_total`` / ``..._accepted_tokens_total`` at
  ``/prometheus/metrics`` (``return_perf_metrics`` and ``enable_iter_perf_stats``).

Deltas are summed over every label but ``position`` (``speedbench.client.run.counters``).
"""
from __future__ import annotations

from dataclasses import dataclass

from speedbench import engines
from speedbench.engines.spec import CounterNames


@dataclass
class CounterAcceptance:
    """Run-level acceptance from Prometheus counter deltas over one load point.

    drafts: drafted steps (steps that carried a draft); draft_tokens / accepted_tokens: proposed
    and accepted draft tokens; accepted_per_position[i]: drafted steps that accepted position i+1
    (so ``accepted_per_position[i] / drafts`` is the marginal P(>= i+1 accepted));
    verify_steps: decode steps when the engine counts them (SGLang), else None;
    generation_tokens: output tokens over the point.
    """

    source: str
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: list[float] | None = None
    verify_steps: float | None = None
    generation_tokens: float | None = None


# Each engine's counters and the server flag each of its acceptance sources needs (warned about by
# ``speedbench run``) are part of its spec (speedbench/engines/<name>.py).
COUNTER_NAMES: dict[str, CounterNames] = {n: s.counters for n, s in engines.REGISTRY.items() if s.counters}
SOURCE_FLAGS: dict[str, dict[str, str]] = {n: dict(s.source_flags) for n, s in engines.REGISTRY.items()
                                           if s.source_flags}


def counter_acceptance(engine: str, delta: dict[str, float],
                       per_position: dict[int, float] | None = None) -> CounterAcceptance | None:
    """The engine's counter deltas as a :class:`CounterAcceptance` (None: no speculative counters)."""
    spec = engines.REGISTRY.get(engine)
    names = spec.counters if spec is not None else None
    if names is None or names.marker not in delta:
        return None

    def get(name: str | None) -> float | None:
        return None if name is None else delta.get(name)

    positions = [per_position[i] for i in sorted(per_position)] if names.per_position and per_position else None
    return CounterAcceptance(source=names.source, drafts=get(names.drafts), draft_tokens=get(names.draft_tokens),
                             accepted_tokens=get(names.accepted_tokens), accepted_per_position=positions,
                             verify_steps=get(names.verify_steps), generation_tokens=get(names.generation_tokens))


def snapshot_delta(before: dict | None, after: dict | None) -> tuple[dict[str, float], dict[int, float]] | None:
    """Deltas between two saved snapshots (``{"totals": {...}, "per_position": {name: {pos: v}}}``,
    as ``counters.jsonl`` holds them); the per-position deltas are those of the
    ``*accepted_tokens_per_pos_total`` metric. None when either snapshot is missing."""
    if not before or not after:
        return None
    b_tot, a_tot = before.get("totals") or {}, after.get("totals") or {}
    totals = {name: float(v) - float(b_tot.get(name, 0.0)) for name, v in a_tot.items()}
    a_pos, b_pos = after.get("per_position") or {}, before.get("per_position") or {}
    names = [n for n in a_pos if n.endswith("accepted_tokens_per_pos_total")] or \
        (list(a_pos) if len(a_pos) == 1 else [])
    per_position: dict[int, float] = {}
    if names:
        earlier = {int(p): float(v) for p, v in (b_pos.get(names[0]) or {}).items()}
        per_position = {int(p): float(v) - earlier.get(int(p), 0.0)
                        for p, v in sorted(a_pos[names[0]].items(), key=lambda kv: int(kv[0]))}
    return totals, per_position


__all__ = ["COUNTER_NAMES", "SOURCE_FLAGS", "CounterAcceptance", "CounterNames", "counter_acceptance",
           "snapshot_delta"]
