"""``speedbench sweep PLAN``: every variant x workload of a plan file, resumable, one report."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.options import add_arguments, option, reuse
from speedbench.settings import AnalysisOptions, SharedOptions


@dataclass(kw_only=True)
class SweepOptions:
    """``speedbench sweep``'s options, declared once (``speedbench.options``); --resamples and
    --no-progress are the shared ones."""

    plan: Path = option("plan", parse=Path, metavar="PLAN", help="plan file (TOML)")
    out: Path = option("--out", parse=Path, help="sweep folder (created; resumed when it exists)")
    check: bool = option("--check", default=False, help="check the plan and list the runs it would make; start nothing")
    no_report: bool = option("--no-report", default=False, help="measure only; write no report")
    retry_errors: bool = option("--retry-errors", default=False, help=(
        "also run again, in finished runs, the request-turns whose last record failed with a kind the plan's "
        "retry_kinds names (default: transient ones), as `speedbench run --retry-errors` does"))
    num_resamples: int = reuse(AnalysisOptions, "num_resamples")  # as run and report
    no_progress: bool = reuse(SharedOptions, "no_progress")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a plan file: servers one at a time, every workload and load point, one report",
        description=(
            "Read PLAN (TOML: variants = servers to start or URLs, workloads = dataset configs with "
            "their load points, options of `speedbench run`), check all of it before anything starts, "
            "then for each variant start its server in its own process group, wait for health, record "
            "its command, version and /metrics, run every workload and repeat with the measurement "
            "client, stop the server and check it is gone. Rerunning the same command resumes: finished "
            "runs are not rerun, an interrupted run continues request by request. Writes OUT/runs/*, "
            "OUT/servers/*, OUT/report/ (`speedbench report` over all runs) and OUT/sweep.html/.md/.json "
            "(pairs with baselines, best draft length per batch size over repeats, random vs real "
            "text) and a leaderboard bundle per speculative variant. See docs/sweep.md."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, SweepOptions)
    parser.set_defaults(func=run)


def _print_check(plan, units) -> None:
    print(f"plan {plan.path}: {len(plan.variants)} variants, {len(plan.workloads)} workloads, {len(units)} runs")
    for v in plan.variants:
        where = v.url or v.command
        extra = f"K={v.k}, baseline {v.baseline}" if v.speculative else "no speculation"
        print(f"  variant {v.name}: {v.engine}, {v.method}, {extra}\n    {where}")
    for unit in units:
        options = unit.options(plan, "URL")
        print(f"  run {unit.unit_id}: {unit.workload.dataset} {unit.workload.config}, points "
              f"{','.join(p[0] for p in options.points())}")


def run(args: argparse.Namespace) -> int:
    from speedbench.sweep.plan import PlanError, load_plan
    from speedbench.sweep.runner import SweepRunner, preflight
    from speedbench.sweep.units import plan_units

    try:
        plan = load_plan(args.plan)
        if args.check:
            units = plan_units(plan, args.out)
            preflight(plan, units, args.out)
            _print_check(plan, units)
            return 0
    except PlanError as error:
        print(f"speedbench sweep: {error}", file=sys.stderr)
        return 2
    def _stop_on_term(signum, frame):
        # A batch system's SIGTERM stops as cleanly as Ctrl-C: it becomes a SIGINT, which the
        # client's event loop turns into a cancellation (an exception raised here instead could
        # land inside a transport callback, where the loop would only log it).
        os.kill(os.getpid(), signal.SIGINT)

    signal.signal(signal.SIGTERM, _stop_on_term)
    runner = SweepRunner(plan, args.out, progress=not args.no_progress,
                         log=lambda text: print(text, file=sys.stderr, flush=True), retry_errors=args.retry_errors)
    try:
        outcome = runner.run()
    except PlanError as error:
        print(f"speedbench sweep: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nspeedbench sweep interrupted: the server is stopped, every finished request is kept in "
              f"{args.out}/runs; rerun the same command to resume.", file=sys.stderr)
        return 130
    if not args.no_report:
        from speedbench.sweep.report import write_sweep_report

        files = write_sweep_report(plan, outcome, args.out, num_resamples=args.resamples)
        for line in files.summary:
            print(line)
        print(f"\nsweep report: {files.html}  (also {files.markdown.name}, {files.json.name}); "
              f"all runs: {files.report_html}")
    for key, message in outcome.failed.items():
        print(f"speedbench sweep: {key} failed: {message.splitlines()[0]}", file=sys.stderr)
    if outcome.failed:
        print("rerun the same command to retry what failed (finished runs are kept).", file=sys.stderr)
        return 1
    return 0
