"""How long the leaderboard takes to accept a full-size submission, and how big the bundle is.

A synthetic submission shaped like a real one (speedbench.leaderboard.synthetic): the whole
Qualitative split (880 prompts, 512 output tokens each, EAGLE-like acceptance, K = 3) plus a
throughput sweep (240 prompts at concurrency 1, 8 and 64, 256 tokens) and its autoregressive
baseline. Prints pack time, bundle size, and the Space's validate + recompute + store time,
split into reading/checking and the metrics core, next to a plain json.loads of the records
(the floor any validator pays).

Run: .venv/bin/python bench/leaderboard_submit.py
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run
from speedbench.leaderboard.validate import compute_entry_metrics, parse_bundle, submit_bundle


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        dataset = make_dataset(root / "speed-bench", rows_per_category=80)
        engine = SimulatedEngine(rates=(0.8, 0.7, 0.6), step_time_s=0.02)
        qual = make_run(root / "qual", dataset, "qualitative", engine, output_tokens=512, seed=1)
        tp = make_run(root / "tp", dataset, "throughput_1k", engine, concurrencies=(1, 8, 64), output_tokens=256, seed=2)
        ar = make_run(root / "ar", dataset, "throughput_1k", SimulatedEngine(speculative=False, step_time_s=0.014),
                      concurrencies=(1, 8, 64), output_tokens=256, seed=3)
        builds = KnownBuilds([describe_dataset(dataset)])
        print(f"synthetic runs written in {time.perf_counter() - t:.1f} s")
        records = sum(len((d / "records.jsonl").read_text().splitlines()) for d in (qual, tp, ar))
        chunks = sum(len(json.loads(line)["chunk_tokens"]) for d in (qual, tp, ar)
                     for line in (d / "records.jsonl").read_text().splitlines())
        raw = sum((d / "records.jsonl").stat().st_size for d in (qual, tp, ar))

        t = time.perf_counter()
        bundle = pack_bundle([qual, tp], {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
                                          "engine_version": "1", "gpu": "g", "draft_length": 3, "temperature": 0}, [ar])
        pack_s = time.perf_counter() - t
        print(f"bundle: {records} request records, {chunks} chunks, records.jsonl {raw / 2**20:.1f} MiB -> "
              f"bundle {len(bundle) / 2**20:.2f} MiB (packed in {pack_s:.2f} s)")

        t = time.perf_counter()
        for d in (qual, tp, ar):
            for line in (d / "records.jsonl").read_text().splitlines():
                json.loads(line)
        floor_s = time.perf_counter() - t
        t = time.perf_counter()
        parsed = parse_bundle(bundle, builds)
        parse_s = time.perf_counter() - t
        t = time.perf_counter()
        compute_entry_metrics(parsed)
        metrics_s = time.perf_counter() - t
        store = LeaderboardStore(root / "board.sqlite3")
        t = time.perf_counter()
        entry = submit_bundle(bundle, store, builds)
        total_s = time.perf_counter() - t
        store.close()
        print(f"json.loads of every record (floor): {floor_s:.2f} s")
        print(f"read + check bundle: {parse_s:.2f} s ({parse_s / floor_s:.1f}x the floor)")
        print(f"recompute metrics (1000-resample bootstrap CIs): {metrics_s:.2f} s")
        print(f"submit_bundle end to end (validate, recompute, store): {total_s:.2f} s -> entry {entry.id}, "
              f"AL {entry.metrics['acceptance']['acceptance_length']:.3f}, expected {engine.expected_al():.3f}")


if __name__ == "__main__":
    main()
