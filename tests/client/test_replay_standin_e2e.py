"""`--synthetic-from` on the TensorRT-LLM stand-in: a profile's marginal rates become the stand-in's
conditional rates (checked by hand), and a run against it reproduces the profile's AL within 3%."""
from __future__ import annotations

import json

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import Simulation, StandinServer

MARGINAL = [0.9, 0.75, 0.5, 0.3]  # AL = 1 + 2.45


def _profile(path):
    path.write_text(json.dumps({"schema_version": "1.0", "num_speculative_tokens": 4,
                                "marginal_accept_rates": MARGINAL, "mean_accept_length": 3.45,
                                "per_category": {"qa": {"marginal_accept_rates": [0.5, 0.2, 0.1, 0.0]}}}))
    return path


def test_profile_maps_onto_conditional_rates(tmp_path):
    simulation = Simulation.from_profile(_profile(tmp_path / "p.json"))
    assert simulation.conditional_rates == pytest.approx([0.9, 0.75 / 0.9, 0.5 / 0.75, 0.3 / 0.5], rel=1e-12)
    qa = Simulation.from_profile(tmp_path / "p.json", category="qa")
    assert qa.conditional_rates == pytest.approx([0.5, 0.4, 0.5, 0.0], rel=1e-12)


def test_trtllm_standin_replays_the_profile_al(tmp_path, models_dir):
    with StandinServer("trtllm", Simulation.from_profile(_profile(tmp_path / "p.json"))) as server:
        dataset = write_dataset(tmp_path / "d", story_rows(12))
        assert run_cli("trtllm", server.url, dataset, tmp_path / "run", models_dir, "--concurrency", "4",
                       "--max-tokens", "800", "--ignore-eos", "--draft-length", "4") == 0
    steps = accepted = 0
    for record in read_jsonl(tmp_path / "run" / "records.jsonl"):
        if record["warmup"] or record["error"]:
            continue
        sizes = [t for t in record["chunk_tokens"] if t > 0][1:-1]  # the stand-in's chunks are its steps
        steps += len(sizes)
        accepted += sum(s - 1 for s in sizes)
    replayed = 1 + accepted / steps
    assert abs(replayed - 3.45) <= 0.03 * 3.45, replayed
