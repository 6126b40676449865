"""Load shapes and workers: Poisson arrivals on schedule, concurrency shares, warmup exclusion,
the measurement clock at the scheduled send time."""
from __future__ import annotations

import json
import random

import pytest

from speedbench.client.load.shapes import poisson_offsets_ns
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import Simulation, StandinServer
from speedbench.client.execution.processes import split_concurrency


def test_poisson_offsets_are_seeded_exponential_gaps():
    offsets = poisson_offsets_ns(4, 2.0, seed=7)
    generator = random.Random(7)
    expected, now = [], 0.0
    for _ in range(4):
        expected.append(int(now * 1e9))
        now += generator.expovariate(2.0)
    assert offsets == expected and offsets[0] == 0
    assert poisson_offsets_ns(4, 2.0, seed=8) != offsets


def test_split_concurrency():
    assert split_concurrency(10, 3) == [4, 3, 3]
    assert split_concurrency(1, 2) == [1, 0]
    assert sum(split_concurrency(1024, 2)) == 1024


def test_open_loop_sends_on_the_poisson_schedule_across_workers(tmp_path, models_dir):
    rows = story_rows(6)
    dataset = write_dataset(tmp_path / "d", rows)
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--request-rate", "50",
                       "--arrival-seed", "3", "--max-tokens", "8", "--workers", "2") == 0
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    assert {r["worker"] for r in records} == {0, 1}
    assert all(r["load_shape"] == "open" and r["request_rate"] == 50 and r["run_point"] == "r50" for r in records)
    # Both workers share one start on one monotonic clock: scheduled times are exactly the offsets.
    scheduled = sorted(r["scheduled_ns"] for r in records)
    assert [s - scheduled[0] for s in scheduled] == sorted(poisson_offsets_ns(6, 50.0, seed=3))
    assert all(r["send_ns"] >= r["scheduled_ns"] and r["chunk_ns"][0] >= r["send_ns"] for r in records)
    point = json.loads((tmp_path / "r" / "results.json").read_text())["points"][0]
    assert point["requested_concurrency"] is None and point["achieved_concurrency"] > 0


def test_closed_loop_workers_share_the_concurrency_and_warmup_is_excluded(tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(8))
    with StandinServer("vllm", Simulation(conditional_rates=[0.9, 0.5])) as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1,4",
                       "--max-tokens", "30", "--ignore-eos", "--workers", "2", "--warmup", "2") == 0
        counters_total = server.counters.accepted
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    warm = [r for r in records if r["warmup"]]
    measured = [r for r in records if not r["warmup"]]
    assert len(warm) == 4 and len(measured) == 16
    assert {r["worker"] for r in measured if r["run_point"] == "c1"} == {0}  # one slot: one worker
    assert {r["worker"] for r in measured if r["run_point"] == "c4"} == {0, 1}
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    for point in results["points"]:
        assert point["num_requests"] == 8 and point["num_warmup_excluded"] == 2
        assert point["achieved_concurrency"] <= point["requested_concurrency"] + 1e-9
        # Counters are scraped after the warmup: their delta is the measured requests only.
        mine = [r for r in measured if r["run_point"] == point["run_point"]]
        assert point["acceptance"]["counters"]["num_accepted_tokens"] == \
            point["acceptance"]["engine"]["num_accepted_tokens"] == \
            sum(r["engine_stats"]["accepted_tokens"] for r in mine)
    assert counters_total == sum(r["engine_stats"]["accepted_tokens"] for r in records)


def test_ttft_is_measured_from_the_scheduled_send_time(tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(4))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--max-tokens", "8") == 0
    records = sorted(read_jsonl(tmp_path / "r" / "records.jsonl"), key=lambda r: r["scheduled_ns"])
    # Closed loop: each request is scheduled the moment the slot's previous request ended.
    for previous, current in zip(records, records[1:]):
        assert current["scheduled_ns"] == previous["end_ns"]
    point = json.loads((tmp_path / "r" / "results.json").read_text())["points"][0]
    ttfts = sorted((r["chunk_ns"][0] - r["scheduled_ns"]) / 1e9 for r in records)
    assert point["latency"]["ttft"]["max"] == pytest.approx(ttfts[-1], rel=1e-9)
