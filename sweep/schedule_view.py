"""The sweep report's schedule table: a schedule variant beside its family's best static K and the baseline.

Per workload, schedule variant and concurrency: the schedule served (``engine.json``'s
``draft_schedule``, recorded when the sweep derived it) and the K it prescribes at that batch
size; the schedule variant's output and per-user throughput; the static-K variant of the family
with the highest median output throughput at that concurrency (ties: the smaller K) with its
figures; and the baseline's. Every figure is a median over repeats of the report's own point rows.
"""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np

from speedbench.engine.draft_schedule import DraftScheduleError, parse_draft_schedule
from speedbench.sweep.plan import Plan
from speedbench.sweep.units import Unit


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def served_schedules(units: list[Unit]) -> dict[str, str]:
    """Variant -> the schedule text its runs were served with (from their ``engine.json``)."""
    out = {}
    for unit in units:
        path = unit.run_dir / "engine.json"
        if unit.variant.schedule and path.is_file():
            text = json.loads(path.read_text(encoding="utf-8")).get("draft_schedule")
            if text:
                out[unit.variant.name] = text
    return out


def _k_at(text: str | None, level: int) -> int | None:
    try:
        return parse_draft_schedule(text).k_at(level) if text else None
    except (DraftScheduleError, ValueError):
        return None  # beyond the schedule's last range the engines keep its last K; not claimed here


def schedule_rows(plan: Plan, points: list, schedules: dict[str, str]) -> list[dict]:
    """The module docstring's rows (``points``: the report's point rows tagged with variant and workload,
    ``speedbench.sweep.views.SweepPoint``, not imported here since views imports this module)."""
    grouped: dict[tuple, list] = defaultdict(list)
    for row in points:
        if row.requested_concurrency:
            grouped[(row.workload, row.variant, row.requested_concurrency)].append(row)

    def medians(workload: str, variant: str, level: int) -> tuple[float | None, float | None]:
        rows = grouped.get((workload, variant, level), [])
        return _median([r.output_tps for r in rows]), _median([r.user_tps_mean for r in rows])

    out = []
    for v in (v for v in plan.variants if v.schedule):
        members = sorted((m for m in plan.variants if m.family == v.schedule and not m.schedule and m.speculative),
                         key=lambda m: m.k)
        for workload, level in sorted({(w, c) for (w, name, c) in grouped if name == v.name}):
            sched_tps, sched_user = medians(workload, v.name, level)
            static = [(m.k, *medians(workload, m.name, level)) for m in members]
            static = [s for s in static if s[1] is not None]
            best = min(static, key=lambda s: (-s[1], s[0])) if static else (None, None, None)
            base_tps, base_user = medians(workload, v.baseline, level) if v.baseline else (None, None)
            out.append({"workload": workload, "variant": v.name, "family": v.schedule, "concurrency": level,
                        "draft_schedule": schedules.get(v.name), "schedule_k": _k_at(schedules.get(v.name), level),
                        "schedule_output_tps": sched_tps, "schedule_user_tps": sched_user,
                        "best_static_k": best[0], "best_static_output_tps": best[1], "best_static_user_tps": best[2],
                        "baseline": v.baseline, "baseline_output_tps": base_tps, "baseline_user_tps": base_user,
                        "repeats": len(grouped.get((workload, v.name, level), []))})
    return out
