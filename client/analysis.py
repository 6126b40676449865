"""``results.json`` for the client: the core's records -> numbers path, nothing of its own.

The figures are computed by :mod:`speedbench.metrics.run_results` (per load point: acceptance
from every source with the step definitions of ``speedbench/records.py``, their like-for-like
agreement, latency and throughput), which ``speedbench report`` and the leaderboard
(:mod:`speedbench.leaderboard.recompute`, through :mod:`speedbench.metrics.record_acceptance`)
call too, so ``results.json``, the report and the board give the same numbers on the same records.
"""
from __future__ import annotations

from speedbench.metrics.run_results import (
    RESULTS_FORMAT_VERSION,
    PointResult,
    analyse_point,
    compute_results,
    read_counter_points,
)

__all__ = ["RESULTS_FORMAT_VERSION", "PointResult", "analyse_point", "compute_results", "read_counter_points"]
