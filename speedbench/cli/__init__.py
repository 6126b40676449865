"""The `speedbench` command line.

Each subcommand lives in its own module in this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to the
function that runs it. Heavy imports happen inside those functions so that
``speedbench --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from speedbench import __version__

# Order is the order shown in --help: the pipeline from data to leaderboard.
SUBCOMMAND_MODULES = ["build", "curate", "fit_isl", "resolve", "serve", "run", "report", "profile", "compare", "export",
                      "vocab_coverage", "submit", "publish_metrics", "sweep", "schedule", "demo", "assets"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="speedbench",
        description=(
            "SPEED-Bench: build the benchmark dataset, serve a model, measure speculative "
            "decoding against an engine, report the results and submit them to the leaderboard."
        ),
        epilog="Run 'speedbench COMMAND --help' for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"speedbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        # A listed module that does not import is a broken installation: let the error show.
        importlib.import_module(f"speedbench.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
