"""Every command's flags, defaults and help are what they were before the options were declared
once (tests/cli/data/cli_options_8370cb4.json: dumped by ``_dump`` below from the parser of commit
8370cb4, the tree before issue 31), apart from the changes listed here; no flag is declared twice
in the source among the shared ones (qualitative selection, sources, engine, draft length)."""
from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest

from speedbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
# Defaults under the repository (demo --plan) are stored as {ROOT}: the baseline was taken in another checkout.
BEFORE = json.loads((Path(__file__).parent / "data" / "cli_options_8370cb4.json").read_text().replace("{ROOT}", str(ROOT)))

# The help of a shared option is now one text for build and curate (before: two wordings of the
# same flag). Written by hand from the two originals.
SHARED_HELP = {
    "--selector": "how the prompts of each category are chosen",
    "--embedder": "'use': the multilingual Universal Sentence Encoder (offline); 'openai': any "
                  "OpenAI-compatible /v1/embeddings endpoint (key from OPENAI_API_KEY when set)",
    "--embedding-url": "with --embedder openai: base URL of any OpenAI-compatible embeddings endpoint (vLLM, TEI, "
                       "...; default $OPENAI_BASE_URL or OpenAI's); key from OPENAI_API_KEY when set",
    "--embedding-model": "with --embedder openai: the embedding model (default text-embedding-3-large)",
    "--dedup-threshold": "drop prompts whose cosine similarity to an earlier one is at least this (FAISS); 1 disables",
}
CHANGED = {(command, flag): help for flag, help in SHARED_HELP.items() for command in ("build", "curate")}
# demo's --sources said the same as build's and resolve's in other words; now it shares their text
CHANGED["demo", "--sources"] = "source folder (the offline mirror); default: $SPEEDBENCH_SOURCES"
# demo's --no-progress had no help; it now has the shared one
CHANGED["demo", "--no-progress"] = "no progress bars"
# Changed on purpose after the baseline (issue 33, replaying a speculation profile): serve's K defaults
# to the profile's, so --draft-length has no fixed default, and two flags were added.
CHANGED["serve", "--draft-length"] = ("speculative tokens per step K (default 4, or the profile's K with "
                                      "--synthetic-from; SGLang draft-tree: the tree's depth)")
DEFAULT_CHANGED = {("serve", "--draft-length"): None}
# issue 29: variable draft depth served (vLLM's schedule, llama.cpp's --draft-p-min); issue 30: --retry-*
ADDED_FLAGS = {"serve": ["--synthetic-from", "--synthetic-category", "--draft-schedule", "--draft-p-min"],
               "run": ["--seed-per-prompt", "--retry-errors", "--retry-kinds"],
               "sweep": ["--retry-errors"]}


def _value(v):
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return f"{type(v).__name__}({v})"


def _dump(parser: argparse.ArgumentParser) -> dict:
    """Each command's actions (flag, dest, default, help, ...) and --help text; the same code made
    the JSON file from the old tree (metavar compared as argparse shows it: None is the dest's)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        groups = {id(a): g.title for g in p._action_groups for a in g._group_actions}
        out[name] = {"help": p.format_help(), "actions": [
            {"flags": list(a.option_strings), "dest": a.dest, "default": _value(a.default), "help": a.help or "",
             "choices": _value(a.choices), "nargs": a.nargs, "required": a.required, "metavar": a.metavar,
             "type": getattr(a.type, "__name__", None), "action": type(a).__name__, "group": groups.get(id(a))}
            for a in p._actions if not isinstance(a, argparse._HelpAction)]}
    return out


def _shown_metavar(action: dict):
    if action["metavar"] is not None or action["choices"] is not None or action["nargs"] == 0:
        return action["metavar"]
    return action["dest"].upper() if action["flags"] else action["dest"]


@pytest.fixture(scope="module")
def now():
    import os
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # the width the old --help texts were dumped at
    try:
        return _dump(build_parser())
    finally:
        if old is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = old


# Commands added after the baseline was taken (their own tests cover their options).
ADDED = {"assets", "profile", "schedule"}


def test_the_same_commands(now):
    assert sorted(now) == sorted(set(BEFORE) | ADDED)


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_flags_defaults_and_help_as_before(now, command):
    before = {(a["flags"] or [a["dest"]])[0]: a for a in BEFORE[command]["actions"]}
    after = {(a["flags"] or [a["dest"]])[0]: a for a in now[command]["actions"]}
    added = ADDED_FLAGS.get(command, [])
    assert [f for f in after if f not in added] == list(before)  # the same flags, in the same --help order
    assert all(f in after for f in added)
    for flag, old in before.items():
        new = dict(after[flag])
        expected = dict(old)
        if (command, flag) in CHANGED:
            expected["help"] = CHANGED[command, flag]
        if (command, flag) in DEFAULT_CHANGED:
            expected["default"] = DEFAULT_CHANGED[command, flag]
        new["metavar"], expected["metavar"] = _shown_metavar(new), _shown_metavar(expected)
        assert new == expected, (command, flag)


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_help_text_as_before(now, command):
    if any(c == command for c, _ in CHANGED) or command in ADDED_FLAGS:
        pytest.skip("a shared option's help was unified (checked flag by flag above)")
    assert now[command]["help"] == BEFORE[command]["help"]


def test_parsed_values_as_before():
    """What the command code reads: the namespace of a typical call, values by hand."""
    parser = build_parser()
    args = vars(parser.parse_args(["build", "--selector", "qp", "--embedding-cache", "c", "--pool-cap", "7"]))
    assert {k: args[k] for k in ("selector", "embedder", "embedding_cache", "pool_cap", "embedding_url",
                                 "embedding_model", "embed_workers", "dedup_threshold")} == {
        "selector": "qp", "embedder": "use", "embedding_cache": Path("c"), "pool_cap": 7, "embedding_url": None,
        "embedding_model": None, "embed_workers": None, "dedup_threshold": 0.95}
    args = vars(parser.parse_args(["curate", "in.jsonl", "--text-field", "t", "--group-by", "g", "--config", "c",
                                   "--out", "o", "--embedder", "openai", "--dedup-threshold", "0.5"]))
    assert {k: args[k] for k in ("selector", "embedder", "embedding_cache", "embedding_url", "embedding_model",
                                 "dedup_threshold")} == {
        "selector": "greedy_swap", "embedder": "openai", "embedding_cache": None, "embedding_url": None,
        "embedding_model": None, "dedup_threshold": 0.5}
    assert "pool_cap" not in args and "embed_workers" not in args  # build's only
    with pytest.raises(SystemExit):
        parser.parse_args(["build", "--selector", "best"])


def _declared_flags(path: Path) -> list[str]:
    """Flags spelled in the file: the first argument of option(...) and of add_argument(...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("option", "add_argument") and str(node.args[0].value).startswith("--"):
                found.append(node.args[0].value)
    return found


def test_shared_options_declared_once():
    """The options several commands share (qualitative selection, sources, engine, draft length) are
    spelled in one place; the commands offer them with add_arguments / reuse."""
    shared = ("--selector", "--embedder", "--embedding-cache", "--pool-cap", "--embedding-url",
              "--embedding-model", "--embed-workers", "--dedup-threshold", "--sources", "--engine", "--draft-length",
              "--no-progress", "--phase-boundary-ids", "--phase-prompt-state")
    places = {flag: [] for flag in shared}
    for top in ("speedbench", "client", "dataset_builder"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for flag in _declared_flags(path):
                if flag in places:
                    places[flag].append(str(path.relative_to(ROOT)))
    expected = {flag: ["speedbench/settings.py"] for flag in shared}
    for flag in ("--phase-boundary-ids", "--phase-prompt-state"):  # report's, reused by submit
        expected[flag] = ["speedbench/report/compute.py"]
    assert places == expected
