"""``speedbench profile RUN_DIR [--category C] --out profile.json``: the run's speculation profile."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.options import add_arguments, from_args, option


@dataclass(kw_only=True)
class ProfileOptions:
    """``speedbench profile``'s options (declared once: speedbench/options.py)."""

    run_dir: Path = option("run_dir", parse=Path, metavar="RUN_DIR")
    out: Path = option("--out", parse=Path, metavar="FILE", help="where to write the profile (JSON)")
    category: str | None = option("--category", default=None, metavar="C",
                                  help="profile only this category's requests (default: every request, with a "
                                       "per-category breakdown)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="write a run's speculation profile (specdec_bench speculation_profile.json, schema 1.0)",
        description=(
            "Read RUN_DIR (records.jsonl, manifest.json, engine.json if any) and write its speculation profile: "
            "conditional and marginal acceptance rates per draft position, the per-step and per-request mean AL, "
            "the check AL = 1 + sum of marginals, K and the verification method, overall and per category, in "
            "NVIDIA specdec_bench's speculation_profile.json schema 1.0 (docs/profile.md). Where the run's draft "
            "length varied, the per-position rates are null with the reason. 'speedbench serve --speculation "
            "synthetic --synthetic-from FILE' replays it."),
    )
    add_arguments(parser, ProfileOptions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.analysis.run_profile import ProfileError, run_profile
    from speedbench.analysis.run_folder import RunFolderError

    options = from_args(ProfileOptions, args)
    try:
        profile = run_profile(options.run_dir, options.category)
    except (ProfileError, RunFolderError) as error:
        print(f"speedbench profile: {error}", file=sys.stderr)
        return 1
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(profile, indent=2) + "\n")
    rates = profile["marginal_accept_rates"]
    shown = ", ".join(f"{r:.4f}" for r in rates) if rates else f"null ({profile['rates_unavailable_reason']})"
    print(f"K = {profile['num_speculative_tokens']}, AL per step {profile['mean_accept_length']:.4f}, "
          f"per request {profile['mean_accept_length_per_request']:.4f}; marginal rates: {shown}")
    print(f"wrote {options.out}")
    return 0
