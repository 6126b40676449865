"""A leaderboard bundle per speculative variant of the sweep (``OUT/bundles/<variant>.tar.gz``).

Each bundle holds the variant's first-repeat runs and its declared baseline's (what
``speedbench submit RUN_DIR... --baseline RUN_DIR --out FILE`` packs), with the submission
metadata from the plan's ``[submission]`` table, the variant (method, K, drafter, engine) and the
runs' manifests (model id, engine version, temperature). A bundle that would lack a field the
leaderboard requires is not written; the summary says which key to add to the plan.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from speedbench.analysis.run_folder import read_run_manifest
from speedbench.sweep.plan import Plan
from speedbench.sweep.units import Unit

BUNDLES_DIR = "bundles"


def bundle_metadata(plan: Plan, unit: Unit) -> dict:
    manifest = read_run_manifest(unit.run_dir)
    submission = plan.submission
    sampling = (manifest.options or {}).get("sampling") or {}
    return {"model": submission.get("model") or manifest.model_id,
            "drafter": unit.variant.drafter or unit.variant.method, "sd_method": unit.variant.method,
            "engine": unit.variant.engine, "engine_version": manifest.engine_version,
            "gpu": submission.get("gpu"), "draft_length": unit.variant.k, "temperature": sampling.get("temperature"),
            "model_family": submission.get("model_family", ""), "submitter": submission.get("submitter", ""),
            "notes": submission.get("notes", "")}


def write_bundles(plan: Plan, units: list[Unit], out: Path, log: Callable[[str], None]) -> list[Path]:
    from speedbench.leaderboard.pack import pack_bundle

    finished = [u for u in units if (u.run_dir / "results.json").exists() and u.repeat == 1]
    written = []
    for variant in plan.variants:
        mine = [u for u in finished if u.variant == variant]
        if not variant.speculative or not mine:
            continue
        if variant.schedule:  # its K changes with the batch size; a bundle would state one K
            log(f"bundle for {variant.name}: not written, its draft length follows a schedule "
                f"({variant.schedule}) and a bundle states one K")
            continue
        baselines = [u for u in finished if u.variant.name == variant.baseline]
        metadata = bundle_metadata(plan, mine[0])
        missing = [key for key in ("model", "engine_version", "gpu", "temperature") if metadata[key] in (None, "")]
        if missing:
            log(f"bundle for {variant.name}: not written, the leaderboard needs {', '.join(missing)} "
                f"(add them under [submission] in the plan)")
            continue
        path = out / BUNDLES_DIR / f"{variant.name}.tar.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pack_bundle([u.run_dir for u in mine], metadata, [u.run_dir for u in baselines]))
        written.append(path)
        log(f"bundle for {variant.name}: {path} (speedbench submit takes it, or upload it in the Space)")
    return written


def sweep_bundles(paths: list[Path]) -> list[Path] | None:
    """The bundles of a sweep folder (``speedbench submit DIR`` with DIR written by ``speedbench
    sweep``); None when ``paths`` is not exactly one sweep folder."""
    from speedbench.sweep.state import STATE_NAME

    if len(paths) != 1 or not (Path(paths[0]) / STATE_NAME).is_file():
        return None
    return sorted((Path(paths[0]) / BUNDLES_DIR).glob("*.tar.gz"))
