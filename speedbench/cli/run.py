"""``speedbench run``: measure a serving engine on a dataset config (the measurement client)."""
from __future__ import annotations

import argparse
import sys

from speedbench.client.run.options import RunOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="measure an engine: stream pre-tokenized prompts, record chunks, write results",
        description=(
            "Send a dataset config's prompts, tokenized once with the target tokenizer, to a serving "
            "engine as token ids; record every streamed chunk with its arrival time; sweep closed-loop "
            "concurrency (or open-loop Poisson rates); write RUN_DIR/records.jsonl, manifest.json, "
            "counters.jsonl and results.json and print a summary table. Rerunning the same command "
            "resumes an interrupted run."
        ),
    )
    RunOptions.add_arguments(parser)  # the one declaration of every option: client/run/options.py
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.client.execution.phase import ErrorBudgetExceeded
    from speedbench.client.execution.ray_cluster import RayClusterError
    from speedbench.client.recording.summary import format_summary
    from speedbench.client.run.options import RunConfigError
    from speedbench.client.run.runner import execute_run
    from speedbench.client.data.workload import WorkloadError
    from speedbench.tokenization.target import TokenizerError

    options = RunOptions.from_args(args)
    try:
        # Warnings (a missing acceptance source and the server flag it needs) go to stderr.
        results = execute_run(options, log=lambda text: print(text, file=sys.stderr, flush=True))
    except ErrorBudgetExceeded as error:
        print(f"speedbench run stopped: {error}. Records so far are in {args.out}/records.jsonl; "
              f"rerun the same command to resume.", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(f"\nspeedbench run interrupted; complete records are in {args.out}/records.jsonl; "
              f"rerun the same command to resume.", file=sys.stderr)
        return 130
    except (RunConfigError, RayClusterError, WorkloadError, TokenizerError, ValueError) as error:
        print(f"speedbench run: {error}", file=sys.stderr)
        return 2
    print(format_summary(results))
    print(f"\nwrote {args.out}/records.jsonl, manifest.json, counters.jsonl, results.json")
    return 0
