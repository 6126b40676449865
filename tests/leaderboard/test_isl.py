"""ISL plausibility for any real tokenizer (issue 24): a throughput bucket's prompts are exactly N
o200k tokens, so a run's ``prompt_tokens / N`` is its tokenizer's ratio to o200k. A small-vocabulary
tokenizer (stories260K: median 2,574 tokens for a 1k prompt) is genuine; a run whose records
disagree with its own ratio, or a ratio no tokenizer has, is not."""
from __future__ import annotations

import json

import pytest

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.synthetic import SimulatedEngine, make_run
from speedbench.leaderboard.validate import submit_bundle

META = {"model": "stories260K", "drafter": "stories260K-draft", "sd_method": "draft_model", "engine": "llamacpp",
        "engine_version": "b6000", "gpu": "CPU", "draft_length": 3, "temperature": 0.0}


def _scaled(run_dir, ratios):
    """The run's first-turn prompt lengths set to ``ratio x 1000`` (cycling through ``ratios``)."""
    path = run_dir / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for i, row in enumerate(rows):
        row["prompt_tokens"] = round(ratios[i % len(ratios)] * 1000)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_dir


@pytest.fixture
def runs_with_ratio(tmp_path, dataset_dir):
    def make(sd_ratios, base_ratios=None):
        engine = SimulatedEngine(engine="llamacpp", engine_version="b6000", rates=(0.6, 0.4, 0.2))
        ar = SimulatedEngine(engine="llamacpp", engine_version="b6000", speculative=False, step_time_s=0.014)
        sd = _scaled(make_run(tmp_path / "tp", dataset_dir, "throughput_1k", engine, concurrencies=(1, 4), seed=71),
                     sd_ratios)
        base = _scaled(make_run(tmp_path / "ar", dataset_dir, "throughput_1k", ar, concurrencies=(1, 4), seed=72),
                       base_ratios or sd_ratios)
        return pack_bundle([sd], META, [base])

    return make


def test_a_small_vocabulary_tokenizer_is_not_refused(seeded_store, known_builds, runs_with_ratio):
    # stories260K's 512-token vocabulary: 2.3x to 2.9x the o200k count, median about 2.57
    entry = submit_bundle(runs_with_ratio([2.31, 2.574, 2.9, 2.45, 2.7]), seeded_store, known_builds)
    assert entry.metrics["speedup"]


def test_a_record_far_from_its_run_s_own_ratio_is_refused(seeded_store, known_builds, runs_with_ratio, bundles):
    # one request claims 32 prompt tokens for a 1,000-token prompt where the run's tokenizer gives 2.5x
    data = runs_with_ratio([2.5] * 9 + [0.032])
    bundles.assert_rejected(seeded_store, known_builds, data, "isl.bucket", "prompt_tokens", "32 prompt tokens")


def test_a_ratio_no_tokenizer_has_is_refused(seeded_store, known_builds, runs_with_ratio, bundles):
    bundles.assert_rejected(seeded_store, known_builds, runs_with_ratio([20.0]), "isl.bucket", "prompt_tokens")


def test_the_baseline_and_sd_run_of_one_tokenizer_must_agree(seeded_store, known_builds, runs_with_ratio, bundles):
    # the same tokenizer (same manifest tokenizer hash) cannot count the same prompts 1x in one run and 4x in another
    bundles.assert_rejected(seeded_store, known_builds, runs_with_ratio([1.0], [4.0]), "isl.bucket", "prompt_tokens",
                            "tokenizer")
