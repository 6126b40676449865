"""``speedbench report``: HTML + Markdown/CSV/JSON report from one or more run folders."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from speedbench.metrics.phases import PROMPT_STATES


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
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, default=Path("report"), help="folder to write the report into")
    parser.add_argument("--title", default="SPEED-Bench report", help="page title")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the 95%% CIs (seeded)")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="relative AL difference between acceptance sources that is flagged")
    phases = parser.add_argument_group(
        "thinking vs answer", "The phase boundary is detected from each run's tokenizer and chat template "
        "(</think>, harmony final channel); these override it.")
    phases.add_argument("--phase-boundary-ids", metavar="IDS", default=None,
                        help="token ids that end thinking: one id (151668, Qwen3's </think>) or a comma-separated sequence")
    phases.add_argument("--phase-prompt-state", choices=PROMPT_STATES, default=None,
                        help="the generation prompt leaves thinking to the model (none), opens it (open) or closes "
                             "it (closed: every output is answer)")
    phases.add_argument("--phase-tokenizer", metavar="DIR", default=None,
                        help="tokenizer folder to detect the boundary from (default: each run's manifest)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.report import ReportOptions, RunFolderError, build_report, summary_lines
    from speedbench.tokenization.phase_boundary import PhaseBoundaryError

    options = ReportOptions(num_resamples=args.resamples, title=args.title, agreement_tolerance=args.tolerance,
                            phase_boundary_ids=args.phase_boundary_ids, phase_prompt_state=args.phase_prompt_state,
                            phase_tokenizer=args.phase_tokenizer)
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
