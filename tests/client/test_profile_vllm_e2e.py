"""`speedbench profile` on a real vLLM run (CPU, stories260K with a Q4_0 draft, K = 4): the profile equals
the per-step histogram summed here from each record's own vLLM statistics, and AL = 1 + sum of marginals.
Distinct prompts and no warmup, so no prefix-cache placeholder step occurs (speedbench/metrics/acceptance/steps.py)."""
from __future__ import annotations

import json

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = 4


def test_vllm_profile_equals_the_records(models_dir, tmp_path):
    from speedbench.cli import main
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.vllm import vllm_python

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    dataset = write_dataset(tmp_path / "dataset", story_rows(6))
    out = tmp_path / "run"
    config = EngineConfig(engine="vllm", speculation="draft", draft_length=K, n_parallel=2, work_dir=str(tmp_path / "w"))
    with LocalEngine(config, log_path=tmp_path / "server.log") as engine:
        assert run_cli("vllm", engine.url, dataset, out, models_dir, "--concurrency", "2", "--max-tokens", "48",
                       "--warmup", "0", "--draft-length", str(K)) == 0
        (out / "engine.json").write_text(json.dumps(engine.describe()))
    assert main(["profile", str(out), "--out", str(tmp_path / "profile.json")]) == 0
    profile = json.loads((tmp_path / "profile.json").read_text())
    records = [r for r in read_jsonl(out / "records.jsonl") if not r["error"]]
    histogram = [sum(r["engine_stats"]["acceptance_histogram"][j] for r in records) for j in range(K + 1)]
    steps = sum(histogram)
    assert steps == sum(r["engine_stats"]["drafted_steps"] for r in records)
    marginal = [sum(histogram[i:]) / steps for i in range(1, K + 1)]
    assert profile["measurement_conditions"]["acceptance_source"] == "engine"
    assert profile["acceptance_length_histogram"] == {str(j + 1): n for j, n in enumerate(histogram)}
    assert profile["marginal_accept_rates"] == pytest.approx(marginal, rel=1e-12)
    al = 1 + sum(r["engine_stats"]["accepted_tokens"] for r in records) / steps
    assert profile["mean_accept_length"] == pytest.approx(al, rel=1e-12)
    assert profile["mean_accept_length"] == pytest.approx(1 + sum(profile["marginal_accept_rates"]), rel=1e-12)
    per_request = [1 + r["engine_stats"]["accepted_tokens"] / r["engine_stats"]["drafted_steps"] for r in records]
    assert profile["mean_accept_length_per_request"] == pytest.approx(sum(per_request) / len(per_request), rel=1e-12)
    assert profile["rates_unavailable_reason"] is None
