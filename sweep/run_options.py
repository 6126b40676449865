"""A plan's run-option tables -> ``RunOptions``, through ``speedbench run``'s own declaration.

The keys of ``[run]``, of a ``[[workload]]`` and of ``[variant.run]`` are ``speedbench run``'s
long options with ``_`` for ``-`` (``max_tokens``, ``concurrency``, ``request_rate``, ``warmup``,
and any option ``speedbench run`` gains later): each value is handed to ``speedbench run``'s own
parser, so the plan accepts exactly what the command accepts and converts it the same way.
``speedbench run``'s options are declared once (``speedbench.client.run.options.RunOptions``);
the sweep adds them to a parser of its own that raises instead of exiting. What the sweep
decides itself (engine, URL, dataset, config, tokenizer, run folder, K) is refused in these
tables.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

# Set by the sweep from the variant and the workload, never by a run table.
SWEEP_SET = {"engine": "the variant's engine", "url": "the variant's server", "out": "the sweep's --out",
             "config": "the workload's config", "dataset": "the workload's or the plan's dataset",
             "tokenizer": "the plan's tokenizer", "draft_length": "the variant's k"}


class RunOptionError(ValueError):
    """A run-table key that ``speedbench run`` does not have, or a value its parser refuses."""


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's documented hook; raise instead of exiting
        raise RunOptionError(message)


def run_parser() -> argparse.ArgumentParser:
    """``speedbench run``'s options, from their one declaration (``RunOptions.add_arguments``)."""
    from speedbench.client.run.options import RunOptions

    parser = _RaisingParser(prog="speedbench run")
    RunOptions.add_arguments(parser)
    return parser


def _action(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    flag = "--" + key.replace("_", "-")
    return next((a for a in parser._actions if flag in a.option_strings), None)


def _argv_value(action: argparse.Action, value: Any) -> str:
    """The command-line text of a TOML value; TOML types must match what the option takes."""
    if action.type is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise RunOptionError(f"expected an integer, got {value!r}")
    if action.type is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise RunOptionError(f"expected a number, got {value!r}")
    if isinstance(value, bool):
        raise RunOptionError(f"expected a value for {action.option_strings[-1]}, got {value!r}")
    if isinstance(value, list):
        if not all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
            raise RunOptionError(f"expected a list of numbers or names, got {value!r}")
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def to_argv(parser: argparse.ArgumentParser, key: str, value: Any) -> list[str]:
    """One key as ``speedbench run`` arguments; raises RunOptionError naming what is wrong."""
    if key in SWEEP_SET:
        raise RunOptionError(f"set by the sweep ({SWEEP_SET[key]}), not in a run table")
    action = _action(parser, key)
    if action is None or key in ("help",):
        raise RunOptionError("not an option of `speedbench run` (see speedbench run --help)")
    if action.nargs == 0:  # a flag: true gives it, false leaves it out
        if not isinstance(value, bool):
            raise RunOptionError(f"expected true or false, got {value!r}")
        return [action.option_strings[-1]] if value else []
    return [action.option_strings[-1], _argv_value(action, value)]


def required_argv(engine: str, url: str, tokenizer: str, dataset: str, config: str, out: str) -> list[str]:
    return ["--engine", engine, "--url", url, "--tokenizer", tokenizer, "--dataset", dataset,
            "--config", config, "--out", out]


def check_key(parser: argparse.ArgumentParser, key: str, value: Any) -> None:
    """Parse one key alone (beside placeholder required options): its own error, its own line."""
    parser.parse_args(required_argv("openai", "http://127.0.0.1:1", "t", "d", "c", "o") + to_argv(parser, key, value))


def parse(parser: argparse.ArgumentParser, required: list[str], values: dict[str, Any]) -> argparse.Namespace:
    argv = list(required)
    for key, value in values.items():
        argv += to_argv(parser, key, value)
    return parser.parse_args(argv)


def options_from_args(args: argparse.Namespace):
    """``RunOptions`` from the parsed arguments, as ``speedbench run`` builds them."""
    from speedbench.client.run.options import RunOptions

    return RunOptions.from_args(args)
