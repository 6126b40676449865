"""A schedule variant's command: ``{schedule}`` filled with the schedule its family's runs give.

``schedule = "draft-k{k}"`` in a ``[[variant]]`` names the family (the static-K variants of that
table, and their baseline as K = 0); ``schedule_workload`` picks whose measurements count
(default: the plan's first workload). The sweep runs every schedule variant after the static ones,
derives the schedule from this sweep's run folders (:mod:`speedbench.sweep.schedule_table`) and
writes it in ``schedule_format``: ``ranges`` (``speedbench serve --draft-schedule``'s text,
``1-1:4,2-8:1``) or an engine's own value as compact JSON (``vllm``: the
``num_speculative_tokens_per_batch_size`` list; ``trtllm``: the ``draft_len_schedule`` mapping;
``sglang``: the path of a JSON file holding SGLang's adaptive config, written to
``OUT/servers/<variant>/adaptive-config.json``, for ``--speculative-adaptive-config``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speedbench.engine.draft_schedule import DraftSchedule
from speedbench.engine.schedule_forms import engine_form, schedule_form
from speedbench.sweep.plan import SCHEDULE, Plan, Variant
from speedbench.sweep.schedule_table import schedule_from_sweep


def schedule_value(schedule: DraftSchedule, fmt: str, max_k: int) -> str:
    """The text written for ``{schedule}`` in format ``fmt`` (module docstring)."""
    if fmt == "ranges":
        return schedule.text
    value = engine_form(schedule, fmt, max_k)[schedule_form(fmt).key]
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def fill_schedule(plan: Plan, variant: Variant, out: Path) -> tuple[str, dict[str, Any]]:
    """(the command with ``{schedule}`` filled, what was derived: recorded in the sweep's state and
    the attempt's record); ``ValueError`` with the reason when the runs cannot give a schedule."""
    workload = variant.schedule_workload or plan.workloads[0].name
    family, workload, derived = schedule_from_sweep(out, variant.schedule, workload)
    value = schedule_value(derived.schedule, variant.schedule_format, variant.k)
    if variant.schedule_format != "ranges" and schedule_form(variant.schedule_format).as_file:  # SGLang's config
        path = out / "servers" / variant.name / "adaptive-config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n", encoding="utf-8")
        value = str(path.resolve())
    record = {"schedule_family": family, "schedule_workload": workload, "draft_schedule": derived.schedule.text,
              "schedule_format": variant.schedule_format, "schedule_value": value,
              "schedule_choices": [{"concurrency": c.concurrency, "k": c.k, "leader_k": c.leader_k,
                                    "tied": list(c.tied), "median_output_tps": c.median_output_tps,
                                    "repeats": c.repeats} for c in derived.choices]}
    return variant.command.replace(SCHEDULE, value), record
