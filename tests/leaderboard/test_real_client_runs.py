"""Run folders written by the real `speedbench run` (against the client's vLLM stand-in, which
speaks vLLM's wire format and simulates speculative decoding with known acceptance rates) go
through packing, validation and recomputation; the board's figures agree with the client's own
results.json, computed by separate code."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.validate import submit_bundle

RATES = [0.85, 0.6, 0.35]


@pytest.fixture(scope="module")
def client_runs(tmp_path_factory, models_dir):
    from tests.standins.fixtures import run_cli, story_rows, write_dataset
    from tests.standins.standin import Simulation, StandinServer

    root = tmp_path_factory.mktemp("client_runs")
    rows = story_rows(6)
    dataset = write_dataset(root / "speed-bench", rows, config="qualitative")
    # a 1k bucket's prompts are about 1,000 tokens long (the board checks the ISL)
    long_rows = [dataclasses.replace(r, turns=[r.turns[0] + ". " + " ".join(["The sun was hot and bright."] * 120)])
                 for r in rows]
    write_dataset(root / "speed-bench", long_rows, config="throughput_1k")

    def run(config, rates, out, *extra):
        with StandinServer("vllm", Simulation(conditional_rates=rates, step_s=0.001)) as server:
            code = run_cli("vllm", server.url, dataset, root / out, models_dir, "--max-tokens", "60",
                           "--ignore-eos", *extra)
        assert code == 0
        return root / out

    # run_cli passes --config tiny; a later --config wins in argparse
    qual = run("qualitative", RATES, "qual", "--config", "qualitative", "--concurrency", "2")
    tp = run("throughput_1k", RATES, "tp", "--config", "throughput_1k", "--concurrency", "1,3")
    ar = run("throughput_1k", [0.0], "tp-ar", "--config", "throughput_1k", "--concurrency", "1,3")
    # The stand-in cannot serve without a drafter; with acceptance 0 every step emits one token,
    # as without speculation, but it still reports drafts. A vLLM server without speculation
    # reports no speculative-decoding metrics at all: drop them, as such a server would send.
    records = ar / "records.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    records.write_text("".join(json.dumps({**r, "engine_stats": None}) + "\n" for r in lines))
    return dataset, qual, tp, ar


def test_client_run_folders_are_accepted_and_agree_with_the_client(client_runs, tmp_path):
    dataset, qual, tp, ar = client_runs
    builds = KnownBuilds([describe_dataset(dataset, name="client test build")])
    bundle = pack_bundle([qual, tp], {"model": "standin/model", "drafter": "standin drafter", "sd_method": "eagle3",
                                      "engine": "vllm", "engine_version": "0.0-standin", "gpu": "none",
                                      "draft_length": 3, "temperature": 0}, [ar])
    store = LeaderboardStore(tmp_path / "board.sqlite3")
    metrics = submit_bundle(bundle, store, builds).metrics
    store.close()

    client = json.loads((qual / "results.json").read_text())
    (point,) = client["points"]
    acceptance = metrics["acceptance"]
    assert acceptance["acceptance_source"] == "engine" == point["primary_acceptance_source"]
    assert acceptance["acceptance_length"] == pytest.approx(point["acceptance"]["engine"]["acceptance_length"],
                                                            rel=1e-12)
    true_al = 1 + sum(math.prod(RATES[: i + 1]) for i in range(len(RATES)))
    assert abs(acceptance["acceptance_length"] - true_al) < 0.25

    client_tp = {p["requested_concurrency"]: p for p in json.loads((tp / "results.json").read_text())["points"]}
    client_ar = {p["requested_concurrency"]: p for p in json.loads((ar / "results.json").read_text())["points"]}
    speedups = {s["concurrency"]: s for s in metrics["speedup"]}
    assert set(speedups) == {1, 3}
    for c, speedup in speedups.items():
        expected = client_tp[c]["latency"]["output_tps"] / client_ar[c]["latency"]["output_tps"]
        assert speedup["speedup_measured"] == pytest.approx(expected, rel=1e-9)
