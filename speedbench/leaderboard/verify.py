"""A maintainer's reproduction of an entry: fresh runs compared with the stored ones.

``python -m speedbench.leaderboard verify ENTRY --run RUN_DIR [--run ...] [--baseline RUN_DIR]``
packs the fresh run folders with the entry's own metadata, puts them through the same
validation and recomputation as an upload, and compares the figures with the stored entry.
Within tolerance the entry is marked ``verified`` (with the comparison stored beside it);
otherwise it stays ``self-reported``. Tolerances (:class:`Tolerances`):

- AL (step-weighted, overall): within ``max(al_abs, al_rel x stored AL)`` = max(0.1, 5%);
- output tokens/s at each SD load point both have (same dataset config and concurrency): within 20%;
- measured speedup at each load point both have: within 20%.

The AL must be comparable (the fresh runs hold SD records); the others only where both have them.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.leaderboard.validate import compute_entry_metrics, parse_bundle


@dataclass(frozen=True)
class Tolerances:
    al_abs: float = 0.1
    al_rel: float = 0.05
    tps_rel: float = 0.20
    speedup_rel: float = 0.20


def _check(name: str, stored, fresh, allowed: float) -> dict:
    ok = stored is not None and fresh is not None and abs(fresh - stored) <= allowed
    return {"figure": name, "stored": stored, "fresh": fresh, "allowed_difference": allowed, "ok": bool(ok)}


def compare_metrics(stored: dict, fresh: dict, tol: Tolerances = Tolerances()) -> list[dict]:
    """One check per comparable figure (see the module docstring)."""
    s_al = (stored.get("acceptance") or {}).get("acceptance_length")
    f_al = (fresh.get("acceptance") or {}).get("acceptance_length")
    checks = [_check("acceptance_length", s_al, f_al, max(tol.al_abs, tol.al_rel * (s_al or 0)))]

    def points(metrics):
        return {(p["dataset_config"], p["concurrency"]): p for p in metrics.get("points", []) if p.get("role") == "sd"}

    s_points, f_points = points(stored), points(fresh)
    for key in sorted(set(s_points) & set(f_points), key=str):
        s_tps, f_tps = s_points[key]["output_tps"], f_points[key]["output_tps"]
        checks.append(_check(f"output_tps {key[0]} c={key[1]}", s_tps, f_tps, tol.tps_rel * (s_tps or 0)))
    s_speed = {(s["dataset_config"], s["concurrency"]): s["speedup_measured"] for s in stored.get("speedup", [])}
    f_speed = {(s["dataset_config"], s["concurrency"]): s["speedup_measured"] for s in fresh.get("speedup", [])}
    for key in sorted(set(s_speed) & set(f_speed), key=str):
        checks.append(_check(f"speedup {key[0]} c={key[1]}", s_speed[key], f_speed[key],
                             tol.speedup_rel * (s_speed[key] or 0)))
    return checks


def verify_entry(store: LeaderboardStore, entry: Entry, known_builds: KnownBuilds, run_dirs: list[Path],
                 baseline_dirs: list[Path] = (), tol: Tolerances = Tolerances()) -> tuple[bool, list[dict]]:
    """Compare fresh runs with ``entry``; mark it verified when every check holds."""
    bundle = parse_bundle(pack_bundle(list(run_dirs), entry.metadata, list(baseline_dirs)), known_builds)
    checks = compare_metrics(entry.metrics, compute_entry_metrics(bundle), tol)
    ok = all(c["ok"] for c in checks)
    if ok:
        store.set_trust(entry.id, "verified", {
            "verified_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "measurement_sha256": bundle.measurement_sha256, "checks": checks})
    return ok, checks
