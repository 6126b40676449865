"""The sweep's tables, taken from ``speedbench report``'s own figures over the same run folders.

Nothing here recomputes a per-run figure: every throughput, latency, AL, per-position rate and
speedup comes from the ``ReportData`` that ``speedbench report`` computes for the same run
folders (``speedbench.report.compute_report``), so the sweep's figures equal the report's by
construction. What the sweep adds is what only the plan knows: which run belongs to which
variant, workload and repeat, which baseline each variant declared, the medians over repeats,
the best draft length per batch size (``speedbench.sweep.choice``) and random-token vs
real-text throughput.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from speedbench.report.rows import PointRow, PositionRateRow, ReportRow, SpeedupRow, read_rows
from speedbench.sweep.choice import choose
from speedbench.sweep.plan import Plan
from speedbench.sweep.schedule_view import schedule_rows, served_schedules
from speedbench.sweep.units import Unit

RANDOM_PREFIX = "random_"


def _bucket(config: str) -> str | None:
    match = re.search(r"(\d+k)$", config or "")
    return match.group(1) if match else None


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


@dataclass
class SweepPoint(PointRow):
    """A report point row tagged with its plan unit (the keys ``_tag`` puts first)."""

    variant: str = ""
    workload: str = ""
    repeat: int = 0


@dataclass
class DeclaredPair(SpeedupRow):
    """A speedup row of ``declared_pairs``: a variant against the baseline it declared."""

    variant: str = ""
    baseline: str = ""
    workload: str = ""
    repeat: int = 0


def _tag(row: ReportRow, unit: Unit) -> dict:
    return {"variant": unit.variant.name, "workload": unit.workload.name, "repeat": unit.repeat, **row.to_dict()}


def sweep_views(plan: Plan, units: list[Unit], data) -> dict[str, Any]:
    by_run = {u.unit_id: u for u in units}
    points = [SweepPoint.from_dict(_tag(r, by_run[r.run]), "sweep point")
              for r in read_rows(PointRow, data.points, "points") if r.run in by_run]
    return {
        "variants": variant_rows(plan, units, data),
        "acceptance": [_tag(r, by_run[r.run]) for r in read_rows(ReportRow, data.acceptance, "acceptance")
                       if r.run in by_run],
        "position_rates": position_rate_rows(read_rows(PositionRateRow, data.position_rates, "position_rates"), by_run),
        "speedup": declared_pairs(read_rows(SpeedupRow, data.speedup, "speedup"), by_run),
        # measured and Appendix-G speedup per category (speedbench.report.category_speedup)
        "speedup_by_category": declared_pairs(read_rows(SpeedupRow, data.speedup_by_category, "speedup_by_category"),
                                              by_run),
        "best_draft_length": best_draft_rows(plan, points),
        "random_vs_real": random_vs_real(points),
        "pareto": pareto_points(plan, points),
        # a schedule variant beside its family's best static K and the baseline (speedbench.sweep.schedule_view)
        "schedule": schedule_rows(plan, points, served_schedules(units)),
    }


def position_rate_rows(report_rows: list[PositionRateRow], by_run: dict[str, Unit]) -> list[dict]:
    """The report's conditional acceptance per draft position, one row per run, point, category
    and source with ``AR_<i>`` for position i (a category whose steps never reached position i
    has no rate there)."""
    rows: dict[tuple, dict] = {}
    for r in report_rows:
        if r.run not in by_run:
            continue
        key = (r.run, r.point, r.category, r.source)
        unit = by_run[r.run]
        row = rows.setdefault(key, {"variant": unit.variant.name, "workload": unit.workload.name,
                                    "repeat": unit.repeat, "run": r.run, "point": r.point, "category": r.category,
                                    "source": r.source})
        row[f"AR_{r.position}"] = r.conditional_acceptance_rate
    return list(rows.values())


def variant_rows(plan: Plan, units: list[Unit], data) -> list[dict]:
    present = {r.run for r in read_rows(ReportRow, data.runs, "runs")}
    rows = []
    for v in plan.variants:
        mine = [u for u in units if u.variant == v]
        rows.append({"variant": v.name, "engine": v.engine, "method": v.method, "draft_length": v.k,
                     "baseline": v.baseline, "gpus": v.gpus, "server": v.url or v.command,
                     "runs": len([u for u in mine if u.unit_id in present]), "planned_runs": len(mine)})
    return rows


def declared_pairs(speedup_rows: list[SpeedupRow], by_run: dict[str, Unit]) -> list[dict]:
    """The report's speedup rows of each variant against the baseline it declared, same workload
    and repeat (the report pairs every SD run with every baseline on the same config)."""
    rows = []
    for row in speedup_rows:
        sd, base = by_run.get(row.sd_run), by_run.get(row.baseline_run)
        if sd is None or base is None or sd.variant.baseline != base.variant.name:
            continue
        if sd.workload != base.workload or sd.repeat != base.repeat:
            continue
        rows.append({"variant": sd.variant.name, "baseline": base.variant.name, "workload": sd.workload.name,
                     "repeat": sd.repeat, **row.to_dict()})
    return rows


def speedup_medians(pairs: list[dict]) -> list[dict]:
    """Medians over repeats of the ``declared_pairs`` rows (as the sweep's views hold them)."""
    groups: dict[tuple, list[DeclaredPair]] = defaultdict(list)
    for row in (DeclaredPair.from_dict(p, f"sweep speedup[{i}]") for i, p in enumerate(pairs)):
        groups[(row.workload, row.variant, row.baseline, row.concurrency)].append(row)
    return [{"workload": w, "variant": v, "baseline": b, "concurrency": c, "repeats": len(rows),
             "measured_speedup_median": _median([r.measured_speedup for r in rows]),
             "estimated_speedup_median": _median([r.estimated_speedup for r in rows])}
            for (w, v, b, c), rows in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1], item[0][3]))]


def draft_families(plan: Plan) -> list[list]:
    """The speculative variants whose draft lengths compete: one method and drafter against one
    baseline (in plan order). When two of them share a K (one drafter under two server
    configurations), the variants of each ``[[variant]]`` table compete apart instead, so that no
    run stands in for another's."""
    families: dict[tuple, list] = defaultdict(list)
    for v in plan.variants:
        if v.speculative and v.baseline and not v.schedule:  # a schedule variant's K varies: it does not compete
            families[(v.method, v.drafter, v.baseline)].append(v)
    split: list[list] = []
    for members in families.values():
        if len({m.k for m in members}) == len(members):
            split.append(members)
        else:
            tables: dict[int, list] = defaultdict(list)
            for m in members:
                tables[m.source_index].append(m)
            split += tables.values()
    return split


def best_draft_rows(plan: Plan, points: list[SweepPoint]) -> list[dict]:
    """Per workload, draft family (``draft_families``) and concurrency: the K with the highest
    median output TPS, the baseline competing as K = 0."""
    tps: dict[tuple, list[float]] = defaultdict(list)
    for row in points:
        if row.requested_concurrency and row.output_tps:
            tps[(row.workload, row.variant, row.requested_concurrency)].append(row.output_tps)
    rows = []
    for members in draft_families(plan):
        method, drafter, baseline = members[0].method, members[0].drafter, members[0].baseline
        for workload in plan.workloads:
            levels = sorted({c for (w, name, c) in tps if w == workload.name
                             and name in {m.name for m in members} | {baseline}})
            for level in levels:
                values = {m.k: tps.get((workload.name, m.name, level), []) for m in members}
                values[0] = tps.get((workload.name, baseline, level), [])
                if sum(1 for v in values.values() if v) < 2:
                    continue
                choice = choose(values)
                rows.append({
                    "workload": workload.name, "method": method, "drafter": drafter,
                    "variants": ", ".join(m.name for m in members), "baseline": baseline, "concurrency": level,
                    "best_draft_length": choice.best_k, "best_median_output_tps": choice.best.median,
                    "best_mad": choice.best.mad, "repeats": len(choice.best.values),
                    "runner_up_draft_length": choice.runner_up.k if choice.runner_up else None,
                    "runner_up_median_output_tps": choice.runner_up.median if choice.runner_up else None,
                    "runner_up_mad": choice.runner_up.mad if choice.runner_up else None,
                    "uncertain": choice.uncertain, "note": choice.note,
                    "candidates": {str(c.k): {"median": c.median, "mad": c.mad, "values": c.values}
                                   for c in choice.candidates}})
    return rows


@dataclass(frozen=True)
class _Medians:
    """Medians over the repeats of one variant, bucket, concurrency and kind (random or real text)."""

    output_tps: float | None
    user_tps: float | None
    config: str


def random_vs_real(points: list[SweepPoint]) -> list[dict]:
    """Per variant, length bucket and concurrency: random-token vs real-text output TPS (medians
    over repeats) and the overestimate ``random / real - 1`` (the paper measured +23% with SD)."""
    medians: dict[tuple, dict[str, _Medians]] = {}
    grouped: dict[tuple, list[SweepPoint]] = defaultdict(list)
    for row in points:
        bucket = _bucket(row.dataset_config)
        if bucket and row.requested_concurrency:
            kind = "random" if row.dataset_config.startswith(RANDOM_PREFIX) else "real"
            grouped[(row.variant, bucket, row.requested_concurrency, kind)].append(row)
    for (variant, bucket, level, kind), rows in grouped.items():
        medians.setdefault((variant, bucket, level), {})[kind] = _Medians(
            _median([r.output_tps for r in rows]), _median([r.user_tps_mean for r in rows]), rows[0].dataset_config)
    out = []
    for (variant, bucket, level), kinds in sorted(medians.items()):
        random, real = (kinds.get(kind) for kind in ("random", "real"))
        if random is None or real is None:
            continue
        out.append({"variant": variant, "isl_bucket": bucket, "concurrency": level,
                    "random_config": random.config, "real_config": real.config,
                    "output_tps_random": random.output_tps, "output_tps_real": real.output_tps,
                    "overestimate": (random.output_tps / real.output_tps - 1)
                    if random.output_tps and real.output_tps else None,
                    "user_tps_random": random.user_tps, "user_tps_real": real.user_tps})
    return out


def pareto_points(plan: Plan, points: list[SweepPoint]) -> list[dict]:
    """Per workload, variant and concurrency: output TPS per GPU vs per-user TPS (medians over repeats)."""
    gpus = {v.name: v.gpus for v in plan.variants}
    speculative = {v.name: v.speculative for v in plan.variants}
    grouped: dict[tuple, list[SweepPoint]] = defaultdict(list)
    for row in points:
        level = row.requested_concurrency or row.request_rate
        grouped[(row.workload, row.dataset_config, row.variant, level)].append(row)
    out = []
    for (w, config, v, level), rows in sorted(grouped.items(), key=lambda i: (i[0][0], i[0][2], i[0][3] or 0)):
        output_tps = _median([r.output_tps for r in rows])  # None: not measured, never written as 0
        closed = rows[0].requested_concurrency is not None
        out.append({"workload": w, "dataset_config": config, "variant": v, "speculative": speculative[v],
                    "load": level, "load_label": f"c={level:g}" if closed else f"{level:g}/s",
                    "output_tps_per_gpu": None if output_tps is None else output_tps / gpus[v],
                    "user_tps": _median([r.user_tps_mean for r in rows]), "repeats": len(rows)})
    return out
