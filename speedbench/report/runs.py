"""The report's run folders: read by the one reader (:mod:`speedbench.analysis.run_folder`), named uniquely.

A run folder may also hold ``engine.json``: what ``LocalEngine.describe()`` said about the
server (speculation mode, draft length, model files with sha256). ``speedbench demo`` writes
it; for other engines the speculation settings come from the manifest or the records
(:mod:`speedbench.metrics.acceptance.draft_length`: a run whose requests report drafted tokens is speculative).
"""
from __future__ import annotations

from pathlib import Path

from speedbench.records import RECORDS_NAME
from speedbench.analysis.run_folder import RunFolder, RunFolderError, read_run_folder


def load_run(path: str | Path) -> RunFolder:
    """One run folder for the report: it must hold measured (non-warmup) records."""
    run = read_run_folder(path)
    if not run.measured:
        raise RunFolderError(f"{Path(run.path) / RECORDS_NAME}: no measured (non-warmup) records")
    return run


def load_runs(paths: list[str | Path]) -> list[RunFolder]:
    """Load run folders; run ids and labels are made unique (folder name appended on a clash)."""
    runs = [load_run(p) for p in paths]
    seen_ids: dict[str, int] = {}
    for run in runs:
        count = seen_ids.get(run.run_id, 0)
        seen_ids[run.run_id] = count + 1
        if count:
            run.run_id = f"{run.run_id}#{count + 1}"
    labels: dict[str, int] = {}
    for run in runs:
        key = f"{run.label}|{run.dataset_config}"
        labels[key] = labels.get(key, 0) + 1
    for run in runs:
        if labels[f"{run.label}|{run.dataset_config}"] > 1:
            run.label = f"{run.label} [{run.run_id}]"
    return runs


__all__ = ["RunFolderError", "load_run", "load_runs"]
