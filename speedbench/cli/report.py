"""``speedbench report``: HTML + Markdown/CSV/JSON report from one or more run folders."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.options import add_arguments, from_args, option
from speedbench.report.compute import PHASES, ReportOptions


@dataclass(kw_only=True)
class ReportFiles:
    """What ``speedbench report`` reads and where it writes (the analysis options: ``ReportOptions``)."""

    run_dirs: list[Path] = option("run_dirs", parse=Path, nargs="+", metavar="RUN_DIR")
    out: Path = option("--out", default=Path("report"), parse=Path, help="folder to write the report into")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML/Markdown/CSV/JSON report from run folders",
        description=(
            "Read RUN_DIRs written by 'speedbench run' (records.jsonl, manifest.json, results.json) and write "
            "a self-contained report.html (PNG plots embedded), report.md, report.json, one CSV per table and "
            "figures/*.png. Every number is computed by speedbench.metrics from the records. Give a baseline "
            "run (no speculation) and speculative runs on the same dataset config to get speedups; give runs "
            "with several draft lengths to get the best draft length per batch size."
        ),
    )
    add_arguments(parser, ReportFiles)
    phases = parser.add_argument_group(
        PHASES, "The phase boundary is detected from each run's tokenizer and chat template "
        "(</think>, harmony final channel); these override it.")
    add_arguments(parser, ReportOptions, {PHASES: phases})  # the one declaration: speedbench/report/compute.py
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.report import RunFolderError, build_report, summary_lines
    from speedbench.tokenization.phase_boundary import PhaseBoundaryError

    options = from_args(ReportOptions, args)
    try:
        files = build_report(args.run_dirs, args.out, options)
    except (RunFolderError, PhaseBoundaryError) as error:
        print(f"speedbench report: {error}", file=sys.stderr)
        return 1
    for line in summary_lines(files.data):
        print(line)
    print(f"report: {files.html}  (also {files.markdown.name}, {files.json.name}, "
          f"{len(files.csv)} CSV tables, {len(files.figures)} figures in {args.out})")
    return 0
