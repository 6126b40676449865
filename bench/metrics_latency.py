"""Benchmark: latency and throughput summary of 100,000 requests with 100 chunks each
(10 million chunk timestamps), overall and for 11 categories.

Run: .venv/bin/python bench/metrics_latency.py [--requests N] [--chunks-per-request M]
Prints wall and CPU time per stage, and checks the output TPS against a direct computation.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from speedbench.metrics import summarize_latency, timings_from_lists


def simulate(num_requests: int, chunks: int, concurrency: int, seed: int):
    """A closed loop of ``concurrency`` workers; chunks of 1..4 tokens every ~20 ms."""
    rng = np.random.default_rng(seed)
    send, times, tokens = [], [], []
    clock = np.zeros(concurrency)
    for r in range(num_requests):
        w = r % concurrency
        t0 = clock[w]
        ttft = 0.05 + rng.exponential(0.02)
        gaps = 0.02 + rng.exponential(0.002, size=chunks - 1)
        t = t0 + ttft + np.concatenate([[0.0], np.cumsum(gaps)])
        send.append(t0)
        times.append(t)
        tokens.append(rng.integers(1, 5, size=chunks))
        clock[w] = t[-1]
    return np.asarray(send), times, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--chunks-per-request", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    send, times, tokens = simulate(args.requests, args.chunks_per_request, args.concurrency, seed=0)
    categories = [f"cat{i % 11}" for i in range(args.requests)]

    load_before = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    timings = timings_from_lists(send, times, tokens)
    c1, t1 = time.process_time(), time.perf_counter()
    summary = summarize_latency(timings, requested_concurrency=args.concurrency)
    c2, t2 = time.process_time(), time.perf_counter()
    by_category = summarize_latency(timings, requested_concurrency=args.concurrency, categories=categories)
    c3, t3 = time.process_time(), time.perf_counter()

    total = sum(int(k.sum()) for k in tokens)
    span = max(t[-1] for t in times) - send.min()
    assert abs(summary.output_tps - total / span) < 1e-9 * summary.output_tps
    assert len(by_category.per_category) == 11
    print(f"machine: {platform.machine()} {platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}")
    print(f"input: {args.requests:,} requests x {args.chunks_per_request} chunks = {timings.chunk_times.values.size:,} timestamps")
    print(f"load average before the timed part: {load_before:.2f} on {os.cpu_count()} cores")
    print(f"{'stage':44s} {'wall s':>7s} {'cpu s':>7s}")
    print(f"{'validate and pack timestamps':44s} {t1 - t0:7.2f} {c1 - c0:7.2f}")
    print(f"{'summary (all distributions)':44s} {t2 - t1:7.2f} {c2 - c1:7.2f}")
    print(f"{'summary + 11 per-category summaries':44s} {t3 - t2:7.2f} {c3 - c2:7.2f}")
    print(f"output TPS {summary.output_tps:,.0f}  achieved concurrency {summary.achieved_concurrency:.2f} (requested {args.concurrency})")
    print(f"TTFT p50/p99 {summary.ttft.p50 * 1e3:.1f}/{summary.ttft.p99 * 1e3:.1f} ms  step latency p50 {summary.step_latency.p50 * 1e3:.1f} ms  "
          f"TPOT p50 {summary.tpot.p50 * 1e3:.2f} ms  user TPS p50 {summary.user_tps.p50:.1f}")


if __name__ == "__main__":
    main()
