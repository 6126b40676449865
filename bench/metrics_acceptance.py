"""Benchmark: acceptance length, per-position rates and 1,000-resample bootstrap CIs over
10 million verification steps in 100,000 requests (target: under 5 s).

Run: .venv/bin/python bench/metrics_acceptance.py [--requests N] [--steps-per-request M]
Prints the time of each stage and the figures, with the point estimates checked against
the rates the data were simulated from.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from speedbench.metrics import requests_from_step_sizes, summarize_acceptance

TRUE_CONDITIONAL = np.array([0.8, 0.7, 0.6, 0.5])  # K = 4


def simulate_step_sizes(num_requests: int, steps_per_request: int, seed: int) -> list[np.ndarray]:
    """Chunk sizes per request: a lone prefill token, then steps drawn from TRUE_CONDITIONAL, then a last chunk."""
    rng = np.random.default_rng(seed)
    n = num_requests * steps_per_request
    draws = rng.random((n, TRUE_CONDITIONAL.size)) < TRUE_CONDITIONAL
    accepted = np.cumprod(draws, axis=1).sum(axis=1)
    flat = (accepted + 1).astype(np.int64).reshape(num_requests, steps_per_request)
    flat[:, 0] = 1  # the prefill token (dropped by the default rules)
    flat[:, -1] = 1  # the cut last chunk (dropped by the default rules)
    return list(flat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--steps-per-request", type=int, default=102)  # 100 steps + first + last chunk
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    step_sizes = simulate_step_sizes(args.requests, args.steps_per_request, seed=1)
    categories = np.asarray([f"cat{i % 11}" for i in range(args.requests)], dtype=object)
    total_chunks = sum(a.size for a in step_sizes)

    load_before = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    table = requests_from_step_sizes(step_sizes, draft_length=TRUE_CONDITIONAL.size, categories=categories)
    c1, t1 = time.process_time(), time.perf_counter()
    point = summarize_acceptance(table, num_resamples=0)
    c2, t2 = time.process_time(), time.perf_counter()
    summary = summarize_acceptance(table, num_resamples=args.resamples, seed=0)
    c3, t3 = time.process_time(), time.perf_counter()

    true_al = 1 + np.cumprod(TRUE_CONDITIONAL).sum()
    print(f"machine: {platform.machine()} {platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}")
    print(f"input: {args.requests:,} requests, {total_chunks:,} chunks, {summary.num_steps:,} steps after trimming, K = {TRUE_CONDITIONAL.size}, 11 categories")
    print(f"load average before the timed part: {load_before:.2f} on {os.cpu_count()} cores (other work slows wall time)")
    print(f"{'stage':48s} {'wall s':>7s} {'cpu s':>7s}")
    print(f"{'chunk sizes -> per-request histograms':48s} {t1 - t0:7.2f} {c1 - c0:7.2f}")
    print(f"{'AL, AR, marginals (no CI)':48s} {t2 - t1:7.2f} {c2 - c1:7.2f}")
    print(f"{f'AL, AR, marginals + {args.resamples} bootstrap resamples':48s} {t3 - t2:7.2f} {c3 - c2:7.2f}")
    print(f"{'total: histograms + summary with CIs':48s} {t3 - t2 + t1 - t0:7.2f} {c3 - c2 + c1 - c0:7.2f}   [target < 5 s]")
    print(f"AL step-weighted     {summary.acceptance_length:.4f}  CI {np.round(summary.acceptance_length_ci, 4).tolist()}  (true {true_al:.4f})")
    print(f"AL request-weighted  {summary.acceptance_length_request_weighted:.4f}  CI {np.round(summary.acceptance_length_request_weighted_ci, 4).tolist()}")
    print(f"conditional AR       {np.round(summary.conditional_acceptance_rate, 4).tolist()}  (true {TRUE_CONDITIONAL.tolist()})")
    print(f"marginal P(>=i)      {np.round(summary.marginal_acceptance_rate, 4).tolist()}")
    assert abs(point.acceptance_length - summary.acceptance_length) < 1e-12


if __name__ == "__main__":
    main()
