"""Measured acceptance replayed on the real llama.cpp: a lite_qualitative run with stories260K's Q4_0 draft,
its profile, then a run against `--speculation synthetic` fed that profile's marginal rates: the replayed
AL is within 3% of the source run's. Both runs send a seed per prompt (``--seed-per-prompt``): llama.cpp
draws its synthetic acceptance from the request's seed, so one seed for every request would replay one
random stream in each (the replayed AL was 5.6% low that way). Both ALs are computed here from the records' chunk sizes (llama.cpp's
steps, the prefill's lone token and each request's last step left out, as the profile does)."""
from __future__ import annotations

import json

import pytest

from speedbench.dataset_builder.registry import BuildContext, available_configs
from speedbench.dataset_builder.writer import write_dataset
from tests.demo.conftest import write_parents
from tests.standins.fixtures import read_jsonl, run_cli

K = 4


def _al_by_hand(run) -> float:
    sizes = []
    for record in read_jsonl(run / "records.jsonl"):
        if record["warmup"] or record["error"]:
            continue
        chunks = [t for t in record["chunk_tokens"] if t > 0]
        sizes += chunks[1:-1] if chunks[0] == 1 else chunks[:-1]
    return sum(sizes) / len(sizes)


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    folder = write_parents(tmp_path_factory.mktemp("replay-data") / "speed-bench", per_category=3, per_tier=3)
    options = {"lite_per_category": 2}
    ctx = BuildContext(sources=folder, out_dir=folder, seed=0, options={**options, "allow_short": True}, progress=False)
    write_dataset(folder, [available_configs()["lite_qualitative"](ctx)], {"seed": 0, "options": options})
    return folder


def _run(models_dir, dataset, out, **config):
    from speedbench.engine import EngineConfig, LocalEngine

    with LocalEngine(EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                                  draft=str(models_dir / "stories260K-draft-q4_0.gguf"), draft_length=K,
                                  n_parallel=2, n_ctx_per_slot=2048, **config)) as engine:
        assert run_cli("llamacpp", engine.url, dataset, out, models_dir, "--config", "lite_qualitative",
                       "--concurrency", "2", "--max-tokens", "256", "--draft-length", str(K), "--seed-per-prompt") == 0
        (out / "engine.json").write_text(json.dumps(engine.describe()))


def test_replayed_profile_reproduces_the_source_al(models_dir, lite, tmp_path, capsys):
    from speedbench.cli import main
    from speedbench.engine.config import synthetic_rates_from

    _run(models_dir, lite, tmp_path / "source", speculation="draft")
    assert main(["profile", str(tmp_path / "source"), "--out", str(tmp_path / "profile.json")]) == 0
    rates = synthetic_rates_from(tmp_path / "profile.json")
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert rates == pytest.approx(profile["marginal_accept_rates"], abs=1e-12)
    _run(models_dir, lite, tmp_path / "replay", speculation="synthetic", synthetic_rates=rates)
    source, replay = _al_by_hand(tmp_path / "source"), _al_by_hand(tmp_path / "replay")
    assert source == pytest.approx(profile["mean_accept_length"], rel=1e-12)
    assert abs(replay - source) <= 0.03 * source, (source, replay)


def test_synthetic_from_errors_name_the_file_and_field(tmp_path, capsys):
    from speedbench.cli import main

    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"schema_version": "1.0", "num_speculative_tokens": 2,
                               "marginal_accept_rates": None, "rates_unavailable_reason": "the draft length varied"}))
    assert main(["serve", "--speculation", "synthetic", "--synthetic-from", str(bad)]) == 2
    assert f"{bad}: marginal_accept_rates is null (the draft length varied)" in capsys.readouterr().err
    bad.write_text(json.dumps({"schema_version": "1.0", "num_speculative_tokens": 2, "marginal_accept_rates": [0.5, 0.7]}))
    assert main(["serve", "--speculation", "synthetic", "--synthetic-from", str(bad)]) == 2
    assert "marginal_accept_rates rises with position" in capsys.readouterr().err
    bad.write_text(json.dumps({"schema_version": "1.0", "num_speculative_tokens": 2, "marginal_accept_rates": [0.7, 0.5]}))
    assert main(["serve", "--speculation", "synthetic", "--synthetic-from", str(bad), "--draft-length", "3"]) == 2
    assert "measured at K = 2" in capsys.readouterr().err
    assert main(["serve", "--speculation", "draft", "--synthetic-from", str(bad)]) == 2
    assert "needs --speculation synthetic" in capsys.readouterr().err
    bad.write_text("{")
    assert main(["serve", "--speculation", "synthetic", "--synthetic-from", str(bad)]) == 2
    assert f"{bad}: not JSON" in capsys.readouterr().err
