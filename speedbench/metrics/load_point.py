"""One load point's latency figures, and when its step latency may enter Appendix G's estimate.

Computed here once for ``results.json`` (:mod:`speedbench.analysis.run_results`), the report and
the board (:mod:`speedbench.leaderboard.recompute`):

- :func:`point_latency`: the latency and throughput summary of a point's successful records
  (:func:`speedbench.metrics.latency.summarize_latency`, per category too), and the slot occupancy
  by Little's law over the whole time a request holds its slot (scheduled -> end of stream). Times
  are made relative to the point's first scheduled send in integer nanoseconds before they become
  seconds, so no figure depends on where the machine's monotonic clock started;
- :func:`appendix_g_estimate`: ``S = t_ar * AL / t_sd`` (:func:`speedbench.metrics.speedup.appendix_g_speedup`)
  only where it means something: ``t_ar`` and ``t_sd`` are mean gaps between chunks, which are
  per-step latencies only when every chunk of both points is one decoding step
  (``chunks_are_steps``), and AL is the tokens per decode step (at least 1); otherwise None.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from speedbench.metrics.client_timing import client_lagged
from speedbench.metrics.latency import LatencySummary, achieved_concurrency, summarize_latency, timings_from_lists
from speedbench.metrics.speedup import appendix_g_speedup

_CLOSED_LOOP_POINT = re.compile(r"^c(\d+)$")


def point_concurrency(point: str | None, records) -> int | None:
    """The requested concurrency of a closed-loop point (the records', else ``"c16"`` -> 16), None for open loop."""
    if records and records[0].requested_concurrency:
        return int(records[0].requested_concurrency)
    match = _CLOSED_LOOP_POINT.match(point or "")
    return int(match.group(1)) if match else None


@dataclass
class PointLatency:
    """A point's latency summary and its slot occupancy (None without records)."""

    summary: LatencySummary | None
    achieved_concurrency_full_request: float | None


def point_latency(records, point: str | None = None) -> PointLatency:
    """Latency and throughput of one load point's successful records (module doc)."""
    if not records:
        return PointLatency(None, None)
    origin = min(r.scheduled_ns for r in records)
    timings = timings_from_lists([(r.scheduled_ns - origin) / 1e9 for r in records],
                                 [[(t - origin) / 1e9 for t in r.chunk_ns] for r in records],
                                 [r.chunk_tokens for r in records])
    summary = summarize_latency(timings, requested_concurrency=point_concurrency(point, records),
                                categories=[r.category for r in records],
                                timed=[not client_lagged(r) for r in records])  # client lag left out
    span = (max(r.end_ns for r in records) - origin) / 1e9
    occupancy = achieved_concurrency([(r.end_ns - r.scheduled_ns) / 1e9 for r in records], span)
    return PointLatency(summary, occupancy)


def appendix_g_estimate(t_ar: float | None, t_sd: float | None, tokens_per_decode_step: float | None,
                        chunks_are_steps: bool) -> float | None:
    """Appendix G's ``t_ar * AL / t_sd`` where it applies (module doc), else None."""
    if not chunks_are_steps or not t_ar or not t_sd or not (tokens_per_decode_step or 0) >= 1:
        return None
    return appendix_g_speedup(t_ar, t_sd, tokens_per_decode_step)


__all__ = ["PointLatency", "appendix_g_estimate", "point_concurrency", "point_latency"]
