"""A maintainer's reproduction of an entry: an independent rerun compared figure by figure.

``python -m speedbench.leaderboard verify ENTRY --run RUN_DIR [--run ...] [--baseline RUN_DIR]
--verifier NAME`` packs the fresh run folders with the entry's own metadata, puts them through the
same validation and recomputation as an upload, and marks the entry ``verified`` only when:

1. **the runs are independent** (:func:`independence`): not a measurement already on the board
   (same measurement digest as any entry), no request-turn copied from the entry's runs (the same
   token streams with every time, from its scheduled send, within max(1 us, 0.01%) of the entry's
   request: the submitter's folder, a copy, or a copy re-dated with a few values nudged, all
   share them; :func:`speedbench.leaderboard.canonical.copied_requests`), made after the entry
   was submitted (every manifest's ``created_unix_s`` and every request's
   ``started_unix_s``), on the engine and, where the manifests name it, the model the entry claims;
2. **every stored figure is reproduced** (:func:`compare_metrics`): a figure the fresh runs did not
   measure fails, it is never skipped. Tolerances (:class:`Tolerances`):

   - AL overall (step- and request-weighted) and per category: within ``max(al_abs, al_rel x
     stored, stored CI half-width + fresh CI half-width)``: max(0.1, 5%, the two 95% bootstrap
     intervals' half-widths);
   - output tokens/s and median user tokens/s at each load point (SD and baseline runs, by dataset
     config and concurrency: the figures of Compare's Pareto curves): within 20%;
   - measured speedup at each load point: within 20%.

The verification record stored with the entry (and copied to the Hub dataset) says who verified,
when, with which runs (their measurement digest and manifests) and every check with its numbers;
the runs themselves, packed as a bundle, are stored beside it (``verifications/<id>.tar.gz`` in the
Hub dataset). An entry restored from the Hub is verified only when :func:`recheck` passes again on
those runs; otherwise it is restored self-reported with a warning saying why.
"""
from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from speedbench.leaderboard import canonical
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.leaderboard.validate import STORED_LIMITS, ValidatedBundle, compute_entry_metrics, parse_bundle


# A fresh request with the entry's token streams whose every time (send, each chunk, end, from its
# scheduled send) is within max(1 us, 0.01%) of that request's is a copy, not a measurement.
COPY_RELATIVE = 1e-4
COPY_ABSOLUTE_NS = 1_000


@dataclass(frozen=True)
class Tolerances:
    al_abs: float = 0.1
    al_rel: float = 0.05
    tps_rel: float = 0.20
    speedup_rel: float = 0.20


def _check(name: str, stored, fresh, allowed: float) -> dict:
    ok = stored is not None and fresh is not None and abs(fresh - stored) <= allowed
    return {"figure": name, "stored": stored, "fresh": fresh, "allowed_difference": allowed, "ok": bool(ok)}


def _half_width(figures: dict, key: str) -> float:
    ci = figures.get(f"{key}_ci") or [None, None]
    return (ci[1] - ci[0]) / 2 if None not in ci[:2] else 0.0


def _al_check(name: str, stored: dict, fresh: dict | None, tol: Tolerances, key: str = "acceptance_length") -> dict:
    s_al = stored.get(key)
    f_al = (fresh or {}).get(key)
    allowed = max(tol.al_abs, tol.al_rel * (s_al or 0), _half_width(stored, key) + _half_width(fresh or {}, key))
    return _check(name, s_al, f_al, allowed)


def _points(metrics: dict) -> dict:
    return {(p.get("role"), p["dataset_config"], p["concurrency"]): p for p in metrics.get("points", [])}


def compare_metrics(stored: dict, fresh: dict, tol: Tolerances = Tolerances()) -> list[dict]:
    """One check per stored figure (module docstring); a figure the fresh runs lack fails."""
    s_acc, f_acc = stored.get("acceptance") or {}, fresh.get("acceptance") or {}
    checks = [_al_check("acceptance_length", s_acc, f_acc, tol),
              _al_check("acceptance_length_request_weighted", s_acc, f_acc, tol,
                        "acceptance_length_request_weighted")]
    f_cats = f_acc.get("per_category") or {}
    for category, figures in sorted((s_acc.get("per_category") or {}).items()):
        checks.append(_al_check(f"acceptance_length {category}", figures, f_cats.get(category), tol))
    f_points = _points(fresh)
    for key, point in sorted(_points(stored).items(), key=str):
        role = "" if key[0] == "sd" else f"{key[0]} "
        for figure in ("output_tps", "user_tps_p50"):
            s_value, f_value = point.get(figure), (f_points.get(key) or {}).get(figure)
            checks.append(_check(f"{role}{figure} {key[1]} c={key[2]}", s_value, f_value,
                                 tol.tps_rel * (s_value or 0)))
    f_speed = {(s["dataset_config"], s["concurrency"]): s["speedup_measured"] for s in fresh.get("speedup", [])}
    for s in sorted(stored.get("speedup", []), key=lambda s: (s["dataset_config"], s["concurrency"] or 0)):
        key = (s["dataset_config"], s["concurrency"])
        checks.append(_check(f"speedup {key[0]} c={key[1]}", s["speedup_measured"], f_speed.get(key),
                             tol.speedup_rel * (s["speedup_measured"] or 0)))
    return checks


def _name(text) -> str:
    return unicodedata.normalize("NFKC", str(text)).casefold()


def _unix(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def independence(store: LeaderboardStore, entry: Entry, fresh: ValidatedBundle, known_builds: KnownBuilds,
                 stored: ValidatedBundle | None = None) -> list[dict]:
    """The checks that the fresh runs are a new measurement of the entry's setup (module docstring);
    ``stored``: the entry's bundle parsed already (a restore, before the entry is stored)."""
    checks = []
    twin = store.has_measurement(fresh.measurement_sha256)
    checks.append({"figure": "independent: not a measurement on the board", "stored": twin,
                   "fresh": fresh.measurement_sha256[:16], "ok": twin is None})
    stored = stored or parse_bundle(store.archive(entry.id), known_builds, STORED_LIMITS)
    timings: dict = {}
    for run in stored.runs:
        for key, times in canonical.request_timings(run).items():
            timings.setdefault(key, []).extend(times)
    copied = sum(canonical.copied_requests(r, timings, COPY_RELATIVE, COPY_ABSOLUTE_NS) for r in fresh.runs)
    checks.append({"figure": "independent: no request copied from the entry's runs",
                   "stored": sum(len(r.records) for r in stored.runs), "fresh": copied, "ok": copied == 0})
    submitted = _unix(entry.submitted_at)
    earliest = min([r.manifest.created_unix_s for r in fresh.runs]
                   + [rec.started_unix_s for r in fresh.runs for rec in r.records])
    checks.append({"figure": "made after the entry was submitted", "stored": entry.submitted_at,
                   "fresh": datetime.fromtimestamp(earliest, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "ok": earliest >= submitted})
    engines = sorted({r.manifest.engine.lower() for r in fresh.runs})
    checks.append({"figure": "engine", "stored": entry.metadata.get("engine"), "fresh": ", ".join(engines),
                   "ok": engines == [entry.metadata.get("engine")]})
    models = sorted({_name(r.manifest.model_id) for r in fresh.runs if r.manifest.model_id})
    claimed = _name(entry.metadata.get("model", ""))
    checks.append({"figure": "model (where the fresh manifests name it)", "stored": entry.metadata.get("model"),
                   "fresh": ", ".join(models), "ok": all(m == claimed for m in models)})
    return checks


def _run_summary(run) -> dict:
    m = run.manifest
    return {"path": run.path, "role": run.role, "engine": m.engine, "engine_version": m.engine_version,
            "model_id": m.model_id, "dataset_config": m.dataset_config, "created_unix_s": m.created_unix_s,
            "client_version": m.client_version, "tokenizer_sha256": m.tokenizer_sha256, "requests": len(run.records)}


def verify_entry(store: LeaderboardStore, entry: Entry, known_builds: KnownBuilds, run_dirs: list[Path],
                 baseline_dirs: list[Path] = (), tol: Tolerances = Tolerances(),
                 verifier: str = "") -> tuple[bool, list[dict]]:
    """Compare fresh runs with ``entry``; mark it verified when every check holds (the packed runs
    are stored with the record: a restore from the Hub re-checks them, :func:`recheck`)."""
    packed = pack_bundle(list(run_dirs), entry.metadata, list(baseline_dirs))
    bundle = parse_bundle(packed, known_builds)
    checks = independence(store, entry, bundle, known_builds)
    checks += compare_metrics(entry.metrics, compute_entry_metrics(bundle), tol)
    ok = all(c["ok"] for c in checks)
    if ok:
        from speedbench import __version__

        store.set_trust(entry.id, "verified", _record(
            datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), verifier, bundle, packed, tol,
            __version__, checks), runs=packed)
    return ok, checks


def _record(verified_at: str, verifier: str, bundle: ValidatedBundle, packed: bytes, tol: Tolerances,
            version: str, checks: list[dict]) -> dict:
    return {"verified_at": verified_at, "verifier": verifier, "measurement_sha256": bundle.measurement_sha256,
            "runs_archive_sha256": hashlib.sha256(packed).hexdigest(), "runs": [_run_summary(r) for r in bundle.runs],
            "tolerances": asdict(tol), "speedbench_version": version, "checks": checks}


def recheck(entry: Entry, stored: ValidatedBundle, record, packed: bytes | None, store: LeaderboardStore,
            known_builds: KnownBuilds) -> tuple[dict | None, str]:
    """A verification read from the Hub dataset, re-made here: (the record, "") when ``packed`` (its
    stored runs) passes the upload checks and every check of :func:`verify_entry` again, with the
    board's own tolerances (never the record's), else (None, why not). From ``record`` only the
    date (ISO), the verifier's name (plain text, at most ``MAX_VERIFIER_CHARS``) and the runs'
    hash are read; every figure is recomputed. ``entry``: the restored entry, not stored yet."""
    from speedbench.leaderboard.validate import iso_date

    record = record if isinstance(record, dict) else {}
    verified_at, verifier = iso_date(record.get("verified_at")), record.get("verifier")
    if packed is None:
        return None, "its verification runs are not in the Hub dataset"
    if record.get("runs_archive_sha256") != hashlib.sha256(packed).hexdigest():
        return None, "its verification runs are not the ones its record names (runs_archive_sha256)"
    if verified_at is None or not _plain_name(verifier):
        return None, "its verification record has no ISO date or no plain verifier name"
    bundle = parse_bundle(packed, known_builds, STORED_LIMITS)
    tol = Tolerances()
    checks = independence(store, entry, bundle, known_builds, stored)
    checks += compare_metrics(entry.metrics, compute_entry_metrics(bundle), tol)
    failed = [c["figure"] for c in checks if not c["ok"]]
    if failed:
        return None, f"its verification runs no longer pass: {', '.join(failed[:3])}"
    version = record.get("speedbench_version")
    return _record(verified_at, verifier, bundle, packed, tol, version if _plain_name(version) else "", checks), ""


MAX_VERIFIER_CHARS = 120


def _plain_name(value) -> bool:
    """A short line of printable text (a name the board shows as plain text)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_VERIFIER_CHARS and value.isprintable()
