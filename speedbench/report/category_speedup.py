"""Per-category speedup for the report: measured (latency and decode speed) and Appendix G, with intervals.

For every row of the speedup table (an SD run, its baseline on the same dataset config, a
concurrency) the requests both points hold are paired by ``question_id/turn`` and split by category
(``speedbench.metrics.speedup.category_speedups``): the latency speedup (sum of baseline E2E over
sum of SD E2E, llama.cpp's ``latency_speedup``), the decode speedup (mean per-request decode speed
with SD over without, llama.cpp's ``decode_speedup``) and the Appendix-G estimate with the point's
step times and the category's tokens per decode step, where the speedup table's estimate applies.
"""
from __future__ import annotations

from typing import Any

from speedbench.analysis.results_types import PointFigures
from speedbench.metrics.latency import per_request_latency, timings_from_lists
from speedbench.metrics.speedup import category_speedups
from speedbench.records import TurnRecord


def decode_speeds(records: list[TurnRecord]) -> list[float]:
    """Each request's decode speed: its user TPS ``(tokens - 1) / (t_N - t_1)`` as the point's latency
    figures compute it (:func:`speedbench.metrics.latency.per_request_latency`, chunks without a token
    left out); NaN with fewer than two chunks."""
    if not records:
        return []
    origin = min(r.scheduled_ns for r in records)  # relative integer ns first, as load_point does
    timings = timings_from_lists([(r.scheduled_ns - origin) / 1e9 for r in records],
                                 [[(t - origin) / 1e9 for t in r.chunk_ns] for r in records],
                                 [r.chunk_tokens for r in records])
    return [float(v) for v in per_request_latency(timings).user_tps]


def timed_turns(records: list[TurnRecord]) -> list[TurnRecord]:
    """The request-turns a speedup pairs: successful, streamed, with a positive E2E."""
    return [r for r in records if r.ok and r.chunk_ns and r.e2e_s > 0]


def turn_ids(records: list[TurnRecord]) -> list[str]:
    """``question_id/turn``: what pairs an SD request with its baseline."""
    return [f"{r.question_id}/{r.turn_index}" for r in records]


def _columns(records: list[TurnRecord]) -> tuple[list[str], list[str], list[float], list[float]]:
    done = timed_turns(records)
    return turn_ids(done), [r.category for r in done], [r.e2e_s for r in done], decode_speeds(done)


def _tokens_per_step(point: PointFigures) -> dict[str, tuple[float, list[float] | None]]:
    per_category = point.primary.per_category if point.primary else {}
    return {c: (s.tokens_per_decode_step, s.tokens_per_decode_step_ci)
            for c, s in per_category.items() if s.tokens_per_decode_step is not None}


def _entry(analysed: dict, run_id: str, concurrency: int):
    return next((a for (rid, _), a in analysed.items()
                 if rid == run_id and a.point.requested_concurrency == concurrency), None)


def category_speedup_rows(speedup: list[dict], analysed: dict,
                          num_resamples: int) -> list[dict[str, Any]]:
    """One row per (speedup row, category); ``analysed`` maps (run, point) to its point, row and records."""
    out = []
    for row in speedup:
        sd, base = _entry(analysed, row["sd_run"], row["concurrency"]), _entry(analysed, row["baseline_run"],
                                                                               row["concurrency"])
        if sd is None or base is None:
            continue
        ids_a, _, lat_a, spd_a = _columns(base.records)
        ids_b, cats_b, lat_b, spd_b = _columns(sd.records)
        estimate = row.get("estimated_speedup") is not None  # the point's Appendix-G gate passed
        results = category_speedups(cats_b, ids_a, lat_a, spd_a, ids_b, lat_b, spd_b,
                                    t_ar=row.get("t_ar_s") if estimate else None,
                                    t_sd=row.get("t_sd_s") if estimate else None,
                                    tokens_per_step=_tokens_per_step(sd.point), num_resamples=num_resamples)
        for result in results:
            item = result.to_dict()
            for key in ("latency_speedup", "decode_speedup", "estimated_speedup"):
                low, high = item.pop(f"{key}_ci") or (None, None)
                item[f"{key}_ci_low"], item[f"{key}_ci_high"] = low, high
            out.append({"dataset_config": row["dataset_config"], "sd_run": row["sd_run"], "sd_label": row["sd_label"],
                        "baseline_run": row["baseline_run"], "concurrency": row["concurrency"], **item})
    return out


__all__ = ["category_speedup_rows", "decode_speeds", "timed_turns", "turn_ids"]
