"""A sweep folder's measurements as the schedule's table (:mod:`speedbench.sweep.schedule`).

Each run folder of a sweep holds ``engine.json`` (its variant, draft family, K, baseline, workload
and repeat, written by the sweep) and ``results.json`` (the client's figures per load point, the
same ``speedbench.analysis.run_results`` figures the sweep's report reads). The table of one
workload and one draft family holds, per concurrency and K, the output throughput of every
repeat: the family's static-K variants and its baseline as K = 0. A schedule variant's own runs
are never part of it.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from speedbench.sweep.schedule import DerivedSchedule, Measured, derive_schedule

RUNS_DIR, ENGINE_NAME, RESULTS_NAME = "runs", "engine.json", "results.json"


class SweepTableError(ValueError):
    """The sweep folder cannot give the table; the message names the folder or the choice to make."""


@dataclass(frozen=True)
class SweepRun:
    run_dir: Path
    variant: str
    family: str
    k: int  # 0: no speculation
    baseline: str | None
    workload: str
    repeat: int
    schedule: str | None  # the family a schedule variant's schedule came from


def _run(run_dir: Path) -> SweepRun | None:
    path = run_dir / ENGINE_NAME
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise SweepTableError(f"{path}: not JSON ({error})") from None
    speculative = info.get("speculation") not in (None, "none")
    # sweeps written before families were recorded: one family per method, drafter and baseline
    family = info.get("family") or f"{info.get('speculation')}/{info.get('drafter')} vs {info.get('baseline')}"
    return SweepRun(run_dir=run_dir, variant=str(info.get("variant")), family=family,
                    k=int(info.get("draft_length") or 0) if speculative else 0, baseline=info.get("baseline"),
                    workload=str(info.get("workload")), repeat=int(info.get("repeat") or 1),
                    schedule=info.get("schedule"))


def read_sweep_runs(sweep_dir: str | Path) -> list[SweepRun]:
    runs_dir = Path(sweep_dir) / RUNS_DIR
    if not runs_dir.is_dir():
        raise SweepTableError(f"{sweep_dir}: no {RUNS_DIR}/ folder (is it the --out folder of `speedbench sweep`?)")
    return [run for run in (_run(d) for d in sorted(runs_dir.iterdir()) if d.is_dir()) if run is not None]


def point_figures(run_dir: Path) -> list[dict]:
    """Per closed-loop load point: concurrency, output and per-user throughput (``results.json``; computed
    from the records when the run has not written it)."""
    path = run_dir / RESULTS_NAME
    if path.is_file():
        points = json.loads(path.read_text(encoding="utf-8"))["points"]
    else:
        from speedbench.analysis.run_results import compute_results

        points = compute_results(run_dir)["points"]
    out = []
    for point in points:
        latency = point.get("latency") or {}
        if point.get("requested_concurrency") and latency.get("output_tps"):
            out.append({"concurrency": int(point["requested_concurrency"]), "output_tps": latency["output_tps"],
                        "user_tps": (latency.get("user_tps") or {}).get("mean")})
    return out


def _only(kind: str, kinds: str, given: str | None, names: list[str], flag: str) -> str:
    if given is not None:
        if given not in names:
            raise SweepTableError(f"no {kind} {given!r} in this sweep; {kinds}: {', '.join(names) or 'none'}")
        return given
    if len(names) != 1:
        raise SweepTableError(f"{len(names)} {kinds} in this sweep ({', '.join(names) or 'none'}): name one with "
                              f"{flag}")
    return names[0]


def family_runs(runs: list[SweepRun], family: str | None, workload: str | None) -> tuple[str, str, list[SweepRun]]:
    """The family's static-K runs and its baseline's, on one workload (each named, or the only one)."""
    static = [r for r in runs if r.k > 0 and not r.schedule]
    family = _only("draft family", "draft families", family, sorted({r.family for r in static}), "--family")
    members = [r for r in static if r.family == family]
    baselines = {r.baseline for r in members}
    workload = _only("workload", "workloads", workload, sorted({r.workload for r in members}), "--workload")
    chosen = [r for r in runs if r.workload == workload and not r.schedule
              and (r in members or (r.k == 0 and r.variant in baselines))]
    return family, workload, chosen


def measured_table(runs: list[SweepRun]) -> list[Measured]:
    values: dict[tuple[int, int], list[float]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: (r.k, r.repeat, r.variant)):
        for point in point_figures(run.run_dir):
            values[(point["concurrency"], run.k)].append(float(point["output_tps"]))
    return [Measured(c, k, tuple(v)) for (c, k), v in sorted(values.items())]


def schedule_from_sweep(sweep_dir: str | Path, family: str | None = None, workload: str | None = None,
                        max_batch: int | None = None) -> tuple[str, str, DerivedSchedule]:
    """(family, workload, the derived schedule) of a sweep folder."""
    family, workload, runs = family_runs(read_sweep_runs(sweep_dir), family, workload)
    table = measured_table(runs)
    if not table:
        raise SweepTableError(f"{sweep_dir}: family {family!r} on workload {workload!r} has no measured "
                              f"closed-loop load point")
    return family, workload, derive_schedule(table, max_batch)
