"""`speedbench profile` on a real llama.cpp run (stories260K with its Q4_0 draft): the profile equals
an independent computation from the records here (chunks are llama.cpp's steps: the prefill's lone
token and each request's last step left out, as docs/profile.md says), and AL = 1 + sum of marginals."""
from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = 4


@pytest.fixture(scope="module")
def llama_draft_run(models_dir, tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine

    root = tmp_path_factory.mktemp("profile")
    dataset = write_dataset(root / "dataset", story_rows(9))
    out = root / "run"
    with LocalEngine(EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                                  draft=str(models_dir / "stories260K-draft-q4_0.gguf"), speculation="draft",
                                  draft_length=K, n_parallel=2, n_ctx_per_slot=512)) as engine:
        assert run_cli("llamacpp", engine.url, dataset, out, models_dir, "--concurrency", "2",
                       "--max-tokens", "96", "--draft-length", str(K)) == 0
        (out / "engine.json").write_text(json.dumps(engine.describe()))
    return out


def _by_hand(records) -> tuple[list[int], float]:
    """(h_0..h_K over the steps kept, mean of per-request ALs) from the chunk sizes."""
    histogram, per_request = Counter(), []
    for record in records:
        sizes = [t for t in record["chunk_tokens"] if t > 0]
        steps = sizes[1:-1] if sizes[0] == 1 else sizes[:-1]
        assert max(steps) <= K + 1
        histogram.update(size - 1 for size in steps)
        if steps:
            per_request.append(sum(steps) / len(steps))
    return [histogram[j] for j in range(K + 1)], sum(per_request) / len(per_request)


def test_profile_equals_the_records(llama_draft_run, tmp_path):
    from speedbench.cli import main

    assert main(["profile", str(llama_draft_run), "--out", str(tmp_path / "profile.json")]) == 0
    profile = json.loads((tmp_path / "profile.json").read_text())
    records = [r for r in read_jsonl(llama_draft_run / "records.jsonl") if not r["warmup"] and not r["error"]]
    histogram, per_request = _by_hand(records)
    steps = sum(histogram)
    marginal = [sum(histogram[i:]) / steps for i in range(1, K + 1)]
    assert profile["schema_version"] == "1.0" and profile["num_speculative_tokens"] == K
    assert profile["method"] == "draft_model" and profile["rates_unavailable_reason"] is None
    assert profile["acceptance_length_histogram"] == {str(j + 1): n for j, n in enumerate(histogram)}
    assert profile["marginal_accept_rates"] == pytest.approx(marginal, rel=1e-12)
    assert profile["conditional_accept_rates"] == pytest.approx(
        [marginal[0]] + [marginal[i] / marginal[i - 1] for i in range(1, K)], rel=1e-12)
    al = 1 + sum(j * n for j, n in enumerate(histogram)) / steps
    assert profile["mean_accept_length"] == pytest.approx(al, rel=1e-12)
    assert profile["mean_accept_length"] == pytest.approx(1 + sum(profile["marginal_accept_rates"]), rel=1e-12)
    assert profile["mean_accept_length_per_request"] == pytest.approx(per_request, rel=1e-12)
    assert profile["validation"]["mean_consistency"]["passed"] is True
    by_category = defaultdict(list)
    for record in records:
        by_category[record["category"]].append(record)
    for name, mine in by_category.items():
        hist, _ = _by_hand(mine)
        assert profile["per_category"][name]["acceptance_length_histogram"] == {
            str(j + 1): n for j, n in enumerate(hist)}


def test_profile_of_one_category_and_errors(llama_draft_run, tmp_path, capsys):
    from speedbench.cli import main

    assert main(["profile", str(llama_draft_run), "--category", "qa", "--out", str(tmp_path / "qa.json")]) == 0
    profile = json.loads((tmp_path / "qa.json").read_text())
    records = [r for r in read_jsonl(llama_draft_run / "records.jsonl")
               if not r["warmup"] and not r["error"] and r["category"] == "qa"]
    histogram, _ = _by_hand(records)
    assert profile["measurement_conditions"]["num_requests"] == len(records)
    assert profile["acceptance_length_histogram"] == {str(j + 1): n for j, n in enumerate(histogram)}
    assert list(profile["per_category"]) == ["qa"]
    assert main(["profile", str(llama_draft_run), "--category", "nope", "--out", str(tmp_path / "x.json")]) == 1
    assert "no successful measured request in category 'nope'" in capsys.readouterr().err
