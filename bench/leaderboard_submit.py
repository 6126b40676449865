"""How long the leaderboard takes to accept a submission, what the largest allowed one costs, and
how many it accepts per second with 8 uploads at once.

1. A synthetic submission shaped like a real one (speedbench.leaderboard.synthetic): the whole
   Qualitative split (880 prompts, 512 output tokens, EAGLE-like acceptance, K = 3) plus a
   throughput sweep (240 prompts at concurrency 1, 8 and 64) and its autoregressive baseline:
   pack time, bundle size, validate + recompute + store time next to a plain json.loads of the
   records (the floor any validator pays).
2. The largest bundle the limits allow: a full 1k bucket (1,536 prompts, 512 tokens) at the
   most load points a run may have (16), baseline included, with SD runs added until the next
   would pass the unpacked cap (SPEEDBENCH_MAX_UNPACKED_MB, 384 MiB). It is submitted in a fresh
   subprocess that prints its peak RSS (VmHWM) and CPU seconds (user + system).
3. 8 concurrent uploads (threads, one store, as the Space's queue runs them) of distinct
   Qualitative bundles: submissions per second, next to the same uploads one after another.

Run: .venv/bin/python bench/leaderboard_submit.py [--skip-largest]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.runs import DEFAULT_CAPS
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run, replicate_run
from speedbench.leaderboard.validate import compute_entry_metrics, parse_bundle, submit_bundle

MiB = 2**20
META = {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm", "engine_version": "1", "gpu": "g",
        "draft_length": 3, "temperature": 0}
CHILD = r"""
import json, resource, sys, time
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.validate import submit_bundle
builds = KnownBuilds.load([sys.argv[2]])
data = open(sys.argv[1], "rb").read()
usage = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
entry = submit_bundle(data, LeaderboardStore(sys.argv[3]), builds)
wall = time.perf_counter() - t
after = resource.getrusage(resource.RUSAGE_SELF)
hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps({"wall_s": wall, "cpu_s": after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime,
                  "peak_rss_mib": hwm, "entry": entry.id, "speedups": len(entry.metrics["speedup"])}))
"""


def _load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def typical(root: Path) -> None:
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
    raw = sum((d / "records.jsonl").stat().st_size for d in (qual, tp, ar))
    t = time.perf_counter()
    bundle = pack_bundle([qual, tp], META, [ar])
    print(f"bundle: {records} request records, records.jsonl {raw / MiB:.1f} MiB -> bundle {len(bundle) / MiB:.2f} MiB "
          f"(packed in {time.perf_counter() - t:.2f} s)")
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
    print(_load())


def largest(root: Path) -> None:
    limits = ArchiveLimits.from_env()
    t = time.perf_counter()
    dataset = make_dataset(root / "big-bench", rows_per_category=512, configs=("throughput_1k",))
    points = DEFAULT_CAPS.max_points
    sd_base = make_run(root / "big-sd", dataset, "throughput_1k", SimulatedEngine(), output_tokens=512, seed=11)
    ar_base = make_run(root / "big-ar", dataset, "throughput_1k", SimulatedEngine(speculative=False, step_time_s=0.014),
                       output_tokens=512, seed=12)
    baseline = replicate_run(ar_base, root / "largest" / "baseline", points)
    runs = []
    size = (baseline / "records.jsonl").stat().st_size
    one = None
    while True:
        run = replicate_run(sd_base, root / "largest" / f"sd{len(runs)}", points, salt=len(runs) + 1)
        one = one or (run / "records.jsonl").stat().st_size
        runs.append(run)
        size += one
        if size + one > 0.97 * limits.max_total_bytes:
            break
    bundle = pack_bundle(runs, META, [baseline])
    path = root / "largest.tar.gz"
    path.write_bytes(bundle)
    builds_dir = root / "builds"
    builds_dir.mkdir()
    (builds_dir / "big.json").write_text(json.dumps(describe_dataset(dataset).to_dict()))
    records = (len(runs) + 1) * points * 1536
    print(f"largest bundle: {len(runs)} SD runs + 1 baseline, {points} load points each, {records} records, "
          f"unpacked {size / MiB:.0f} MiB of {limits.max_total_bytes / MiB:.0f} MiB, upload {len(bundle) / MiB:.1f} MiB "
          f"of {limits.max_archive_bytes / MiB:.0f} MiB (built in {time.perf_counter() - t:.0f} s)")
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(builds_dir), str(root / "largest.sqlite3")],
                         capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-2000:])
        raise SystemExit(1)
    figures = json.loads(out.stdout)
    print(f"largest bundle submitted in a fresh process: peak RSS {figures['peak_rss_mib']:.0f} MiB, "
          f"CPU {figures['cpu_s']:.1f} s, wall {figures['wall_s']:.1f} s -> {figures['entry']} "
          f"({figures['speedups']} speedup points)")
    print(_load())


def concurrent(root: Path, uploads: int = 8) -> None:
    dataset = make_dataset(root / "cc-bench", rows_per_category=80, configs=("qualitative",))
    qual = make_run(root / "cc-qual", dataset, "qualitative", SimulatedEngine(), output_tokens=512, seed=21)
    builds = KnownBuilds([describe_dataset(dataset)])
    lines = (qual / "records.jsonl").read_text().splitlines()
    bundles = []
    for i in range(2 * uploads):  # distinct measurements: one record's end differs by i + 1 ns
        r = json.loads(lines[0])
        r["end_ns"] += i + 1
        variant = root / f"cc-{i}"
        variant.mkdir()
        (variant / "records.jsonl").write_text("\n".join([json.dumps(r)] + lines[1:]) + "\n")
        for name in ("manifest.json", "results.json"):
            (variant / name).write_bytes((qual / name).read_bytes())
        bundles.append(pack_bundle([variant], META))
    store = LeaderboardStore(root / "cc.sqlite3")
    t = time.perf_counter()
    for data in bundles[:uploads]:
        submit_bundle(data, store, builds)
    one_by_one = uploads / (time.perf_counter() - t)
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=uploads) as pool:
        ids = list(pool.map(lambda data: submit_bundle(data, store, builds).id, bundles[uploads:]))
    at_once = uploads / (time.perf_counter() - t)
    assert len(set(ids)) == uploads and store.count() == 2 * uploads
    store.close()
    print(f"{uploads} uploads of an 880-prompt Qualitative bundle ({len(bundles[0]) / MiB:.2f} MiB): "
          f"{one_by_one:.2f} submissions/s one after another, {at_once:.2f} submissions/s with {uploads} at once")
    print(_load())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-largest", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        typical(root)
        concurrent(root)
        if not args.skip_largest:
            largest(root)


if __name__ == "__main__":
    main()
