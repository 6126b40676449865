"""A sweep folder resumed with a plan: what its run folders were measured with must be what the
plan asks for now. Checked before any server starts.

A run folder that holds a measurement (its ``manifest.json``) was made against one server and
with one set of load points, sampling and row selection. Rerunning into it with another server
command would put the new command's name on the old records (a finished run is not rerun) or
mix two servers' records in one run; and ``speedbench run`` refuses to resume with other load
points or sampling, but only once the variant's server is up, which for a large model takes
minutes per variant. Both are refused here, naming the run folder, what it was measured with
and what the plan gives now. What does not change the measurement (bootstrap resamples,
timeouts, the error budget) may change: the run is then finished again in its folder.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from speedbench.sweep import run_options
from speedbench.sweep.plan import Plan, PlanError
from speedbench.sweep.state import SweepState
from speedbench.sweep.units import PLACEHOLDER_URL, Unit, server_identity
from speedbench.records import MANIFEST_NAME

SERVER_FIELDS = {"command": "server command", "url": "server url", "env": "server env", "cwd": "server cwd"}


def _server_changes(unit: Unit, state: SweepState) -> list[str]:
    recorded = state.recorded_inputs(unit.unit_id)
    if recorded is None or "server" not in recorded:
        return []  # never started, or a sweep folder older than this record: nothing to compare
    now = json.loads(json.dumps(server_identity(unit.variant)))
    return [f"{SERVER_FIELDS[key]} was {recorded['server'].get(key)!r}, the plan now gives {now[key]!r}"
            for key in SERVER_FIELDS if recorded["server"].get(key) != now[key]]


def _option_changes(plan: Plan, unit: Unit, parser: argparse.ArgumentParser) -> list[str]:
    """The client's own resume rule (``RESUME_OPTIONS``, engine, config, prompt mode) against the
    run's manifest, before any server is there to resume against."""
    from speedbench.client.run.options import RESUME_OPTIONS
    from speedbench.analysis.run_folder import RunFolderError, read_run_manifest

    try:
        manifest = read_run_manifest(unit.run_dir)
    except RunFolderError as error:
        return [str(error)]
    options = unit.options(plan, PLACEHOLDER_URL, parser)
    now = json.loads(json.dumps(options.manifest_options(), default=str))
    changes = [f"{name} was {was!r}, the plan now gives {new!r}" for name, was, new in (
        ("engine", manifest.engine, options.engine), ("config", manifest.dataset_config, options.config),
        ("prompt_mode", manifest.prompt_mode, options.prompt_mode)) if was != new]
    recorded = manifest.options or {}
    changes += [f"option {key} was {recorded.get(key)!r}, the plan now gives {now.get(key)!r}"
                for key in RESUME_OPTIONS if recorded.get(key) != now.get(key)]
    return changes


def check_resume(plan: Plan, units: list[Unit], out: Path) -> None:
    """Raise PlanError listing every run folder in ``out`` measured otherwise than the plan says."""
    state, parser = SweepState(Path(out)), run_options.run_parser()
    problems = []
    for unit in units:
        if (unit.run_dir / MANIFEST_NAME).is_file():
            problems += [f"  {unit.run_dir}: {change}" for change in
                         _server_changes(unit, state) + _option_changes(plan, unit, parser)]
    if problems:
        raise PlanError(f"{plan.path}: runs already in {out} were measured otherwise than the plan now says:\n"
                        + "\n".join(problems) + "\nresuming would mix or mislabel measurements: use a new --out "
                        "folder, or move those run folders away to measure them again")
