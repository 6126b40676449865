"""ISL plausibility that holds for any real tokenizer (rule ``isl.bucket``).

Every prompt of a Throughput bucket is exactly N ``o200k_base`` tokens (the builder fits each to
N; ``speedbench.schema.THROUGHPUT_BUCKETS``), so a first-turn record's ``prompt_tokens / N`` is
its target tokenizer's count relative to o200k (plus its chat template). A tokenizer's ratio
depends on the tokenizer, not on the run: stories260K's 512-token vocabulary needs about 2.6x
o200k's count, a byte-level one up to about 5x, a vocabulary larger than o200k a little under 1x.
So the check is relative, not a fixed 0.5x..2x band:

- the run's own ratio (the median over its first-turn records) is one a tokenizer can have:
  within ``RATIO_RANGE`` (1/4 .. 8);
- every first-turn record is within ``SPREAD``x of its run's ratio (texts differ by entropy tier,
  not by an order of magnitude: a record that does claims another prompt);
- runs of one tokenizer (the same ``tokenizer_sha256`` in their manifests) in one bundle agree
  within ``SPREAD``x with each other.
"""
from __future__ import annotations

import statistics

from speedbench.leaderboard.schema import BundleRejected, shown
from speedbench.schema import THROUGHPUT_BUCKETS

RATIO_RANGE = (0.25, 8.0)
SPREAD = 3.0


def _bucket_tokens(run) -> int | None:
    config = run.manifest.dataset_config
    return THROUGHPUT_BUCKETS.get(config.split("_", 1)[1]) if config.startswith("throughput_") else None


def _reject(run, record, detail: str) -> BundleRejected:
    return BundleRejected(f"{shown(record.record_key)}: {detail}", rule="isl.bucket", where=f"{run.path}/records.jsonl",
                          field="prompt_tokens")


def run_ratio(run) -> float | None:
    """The median ``prompt_tokens / N`` of a throughput run's first turns (None: not a bucket)."""
    tokens = _bucket_tokens(run)
    firsts = [r.prompt_tokens for r in run.records if r.turn_index == 0]
    return statistics.median(firsts) / tokens if tokens and firsts else None


def check_isl(runs: list) -> None:
    """Refuse a run whose prompt lengths no tokenizer would give for its bucket (module docstring)."""
    by_tokenizer: dict[str, tuple[float, object]] = {}
    for run in runs:
        ratio, tokens = run_ratio(run), _bucket_tokens(run)
        if ratio is None:
            continue
        first = next(r for r in run.records if r.turn_index == 0)
        if not RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]:
            raise _reject(run, first, f"{first.prompt_tokens} prompt tokens in a {tokens}-token bucket: the run's "
                                      f"median is {ratio:.3g}x the o200k length, outside the {RATIO_RANGE[0]:g}x.."
                                      f"{RATIO_RANGE[1]:g}x any tokenizer gives")
        for record in run.records:
            if record.turn_index == 0 and not ratio / SPREAD <= record.prompt_tokens / tokens <= ratio * SPREAD:
                raise _reject(run, record, f"{record.prompt_tokens} prompt tokens in a {tokens}-token bucket, where "
                                           f"this run's tokenizer gives {ratio:.3g}x the o200k length "
                                           f"(expected {tokens * ratio / SPREAD:.0f}..{tokens * ratio * SPREAD:.0f})")
        key = run.manifest.tokenizer_sha256 or ""
        if key in by_tokenizer:
            other_ratio, other = by_tokenizer[key]
            if not other_ratio / SPREAD <= ratio <= other_ratio * SPREAD:
                raise _reject(run, first, f"this run's tokenizer counts {ratio:.3g}x the o200k length, run "
                                          f"{shown(other.path)} with the same tokenizer {other_ratio:.3g}x")
        else:
            by_tokenizer[key] = (ratio, run)
