"""A plan's units of work: one run folder per (variant, workload, repeat), its ``RunOptions``.

The run options of a unit are the plan's ``[run]`` table, overridden by the workload's keys,
overridden by the variant's ``[variant.run]``, plus what the sweep sets (engine, URL, dataset,
config, tokenizer, run folder, and ``--draft-length`` = the variant's K, 0 for a baseline),
parsed by ``speedbench run``'s own parser (``speedbench.sweep.run_options``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speedbench.sweep import run_options
from speedbench.sweep.plan import Plan, PlanError, Variant, Workload

RUNS_DIR = "runs"
PLACEHOLDER_URL = "http://127.0.0.1:1"


@dataclass(frozen=True)
class Unit:
    variant: Variant
    workload: Workload
    repeat: int  # 1-based
    run_dir: Path

    @property
    def unit_id(self) -> str:
        return self.run_dir.name

    def values(self, plan: Plan) -> dict[str, Any]:
        return {**plan.run, **self.workload.run, **self.variant.run}

    def options(self, plan: Plan, url: str, parser=None):
        """``RunOptions`` for this unit against the server at ``url``."""
        parser = parser or run_options.run_parser()
        required = run_options.required_argv(self.variant.engine, url, plan.tokenizer, self.workload.dataset,
                                             self.workload.config, str(self.run_dir))
        required += ["--draft-length", str(self.variant.k)]
        args = run_options.parse(parser, required, self.values(plan))
        return run_options.options_from_args(args)


def unit_dir_name(variant: str, workload: str, repeat: int) -> str:
    return f"{variant}.{workload}.r{repeat}"


def plan_units(plan: Plan, out: Path) -> list[Unit]:
    """In the order they run: variant by variant (one server at a time), repeats, workloads."""
    units = []
    for variant in plan.variants:
        for repeat in range(1, max(w.repeats for w in plan.workloads) + 1):
            for workload in plan.workloads:
                if repeat <= workload.repeats:
                    name = unit_dir_name(variant.name, workload.name, repeat)
                    units.append(Unit(variant, workload, repeat, out / RUNS_DIR / name))
    return units


def server_identity(variant: Variant) -> dict[str, Any]:
    """The variant's server as the plan writes it: command (``{k}`` filled, ``{port}`` not: the
    port a server gets is not what is measured) or URL, its extra environment and folder."""
    return {"command": variant.command, "url": variant.url, "env": dict(variant.env), "cwd": variant.cwd}


def unit_inputs(plan: Plan, unit: Unit) -> dict[str, Any]:
    """What makes two invocations of a unit the same measurement, from the plan: the run options
    as written, the dataset, config and tokenizer, the engine, K and the server (not the URL a
    started server gets, nor the folder). Taken from the plan rather than from ``RunOptions`` so
    that a newer speedbench, whose options gained a field, still recognises the runs an older one
    finished. JSON values (recorded in the sweep's state as they are)."""
    data = {"run": unit.values(plan), "dataset": unit.workload.dataset, "config": unit.workload.config,
            "tokenizer": plan.tokenizer, "engine": unit.variant.engine, "k": unit.variant.k,
            "server": server_identity(unit.variant)}
    return json.loads(json.dumps(data, sort_keys=True, default=str))


def unit_sha256(plan: Plan, unit: Unit) -> str:
    return hashlib.sha256(json.dumps(unit_inputs(plan, unit), sort_keys=True).encode()).hexdigest()


def check_units(plan: Plan, units: list[Unit]) -> None:
    """Every unit's merged run tables parse together as one ``speedbench run`` command line (what
    the key-by-key check of the plan cannot see), before any server starts."""
    parser = run_options.run_parser()
    for unit in units:
        try:
            unit.options(plan, PLACEHOLDER_URL, parser)
        except (run_options.RunOptionError, ValueError) as error:
            raise PlanError(f"{plan.path}: variant {unit.variant.name!r} x workload {unit.workload.name!r}: "
                            f"run options refused: {error}") from None
