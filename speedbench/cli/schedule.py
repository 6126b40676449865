"""``speedbench schedule SWEEP_DIR --engine vllm|trtllm|sglang``: the sweep's best K per batch size as a schedule."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench import engines
from speedbench.options import add_arguments, from_args, option, reuse
from speedbench.settings import SharedOptions

# the engines whose spec says how they take a schedule (speedbench.engines: EngineSpec.schedule_form)
SCHEDULE_ENGINES = engines.names_with("schedule_form")


def _engine_help() -> str:
    forms = [f"{name} ({engines.get(name).schedule_form.key}"
             f"{', written to a file' if engines.get(name).schedule_form.as_file else ''})" for name in SCHEDULE_ENGINES]
    return ("whose form to write, the key that holds the schedule: " + ", ".join(forms)
            + " (SGLang adapts with EAGLE/EAGLE3 only)")


@dataclass(kw_only=True)
class ScheduleOptions:
    """``speedbench schedule``'s options (declared once: speedbench/options.py)."""

    sweep_dir: Path = option("sweep_dir", parse=Path, metavar="SWEEP_DIR")
    engine: str = reuse(SharedOptions, "engine", choices=SCHEDULE_ENGINES, help=_engine_help())
    family: str | None = option("--family", default=None, metavar="NAME", help=(
        "the draft family: the name of its [[variant]] table as the plan writes it, e.g. draft-k{k} (default: "
        "the sweep's only one)"))
    workload: str | None = option("--workload", default=None, metavar="NAME",
                                  help="whose measurements give the schedule (default: the family's only workload)")
    max_batch: int | None = option("--max-batch", default=None, parse=int, metavar="N", help=(
        "the largest batch size the schedule covers (default: the largest measured concurrency; every engine "
        "keeps the last K beyond the last range)"))
    out: Path | None = option("--out", default=None, parse=Path, metavar="FILE",
                              help="also write the schedule, the engine's form and the choices per concurrency "
                                   "(JSON)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schedule",
        help="derive the draft length per batch size from a sweep, in an engine's schedule form",
        description=(
            "Read a sweep folder's static-K variants and their baseline (runs/*/engine.json and results.json) and "
            "choose per measured concurrency the K with the highest median output throughput over the repeats; a "
            "smaller K within the spread of the best (median absolute deviations added) is taken instead, and K 0 "
            "(no speculation) where the baseline is as fast. Batch sizes between two measured concurrencies keep "
            "the lower one's K. Prints the choices and the schedule in the engine's form: vLLM "
            "num_speculative_tokens_per_batch_size, TensorRT-LLM draft_len_schedule, SGLang's adaptive config "
            "(docs/sweep.md)."),
    )
    add_arguments(parser, ScheduleOptions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.engine.draft_schedule import DraftScheduleError
    from speedbench.engine.schedule_forms import engine_form
    from speedbench.sweep.schedule import ScheduleDerivationError
    from speedbench.sweep.schedule_table import SweepTableError, schedule_from_sweep

    options = from_args(ScheduleOptions, args)
    try:
        family, workload, derived = schedule_from_sweep(options.sweep_dir, options.family, options.workload,
                                                        options.max_batch)
        form = engine_form(derived.schedule, options.engine)
    except (SweepTableError, ScheduleDerivationError, DraftScheduleError, OSError) as error:
        print(f"speedbench schedule: {error}", file=sys.stderr)
        return 1
    print(f"draft family {family}, workload {workload}: best K per measured concurrency "
          "(output tokens/s, median over repeats)")
    for choice in derived.choices:
        print(f"  c={choice.concurrency}: K={choice.k} ({choice.median_output_tps:.2f} tokens/s, "
              f"{choice.repeats} repeats; {choice.note})")
    print(f"schedule: {derived.schedule.text}")
    print(f"{options.engine}: {json.dumps(form, sort_keys=True)}")
    if options.out:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(json.dumps({
            "family": family, "workload": workload, "draft_schedule": derived.schedule.text,
            "engine": options.engine, "form": form,
            "choices": [{"concurrency": c.concurrency, "k": c.k, "leader_k": c.leader_k, "tied": list(c.tied),
                         "median_output_tps": c.median_output_tps, "repeats": c.repeats, "note": c.note}
                        for c in derived.choices]}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {options.out}")
    return 0
