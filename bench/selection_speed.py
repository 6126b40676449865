"""Selection speed: Algorithm 1 on 100,000 random unit vectors (d = 512, k = 80) vs a naive swap search.

Prints the wall time of greedy construction, of swap refinement (maintained sums, every swap
delta O(1), all k (N - k) deltas per step vectorised), and of a naive swap search that recomputes
the objective for each candidate swap. The naive search is far too slow to finish (one full pass
is k (N - k) ~ 8 million objective evaluations), so a fixed number of naive evaluations is timed
and extrapolated to one full pass; the script says so in its output.

Also times swap refinement from a random (not greedy) start, where many swaps are accepted.

    .venv/bin/python bench/selection_speed.py [--n 100000] [--dim 512] [--k 80] [--naive-evals 3000]
"""
from __future__ import annotations

import argparse
import os
import time

# One BLAS thread: the products are memory-bound or tiny, and on a shared 2-core machine thread
# wake-ups cost more than they bring (set OPENBLAS_NUM_THREADS=2 to compare).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from speedbench.dataset_builder.selection.greedy_swap import (Selection, greedy, swap_deltas,  # noqa: E402
                                                              swap_refine)
from speedbench.dataset_builder.selection.objective import pairwise_similarity_sum  # noqa: E402


def naive_best_swap_time(x: np.ndarray, subset: np.ndarray, evaluations: int, rng) -> tuple[float, float]:
    """Seconds per naive evaluation (recompute f(S') from the embeddings), and a check value."""
    n, k = len(x), len(subset)
    outside = np.setdiff1d(np.arange(n), subset)
    base = pairwise_similarity_sum(x, subset)
    best = np.inf
    start = time.perf_counter()
    for _ in range(evaluations):
        position, candidate = int(rng.integers(k)), int(outside[rng.integers(len(outside))])
        trial = subset.copy()
        trial[position] = candidate
        best = min(best, pairwise_similarity_sum(x, trial) - base)
    return (time.perf_counter() - start) / evaluations, best


def random_start(x: np.ndarray, k: int, rng) -> Selection:
    chosen = rng.choice(len(x), size=k, replace=False)
    columns = np.stack([x @ x[i] for i in chosen], axis=1).astype(np.float64)
    return Selection(indices=chosen.astype(np.int64), similarity_sums=columns.sum(axis=1), columns=columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--k", type=int, default=80)
    parser.add_argument("--naive-evals", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    x = rng.normal(size=(args.n, args.dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    print(f"pool: {args.n:,} random unit vectors, d={args.dim}, k={args.k}, float32, OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}, cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")

    t0 = time.perf_counter()
    selection = greedy(x, args.k, np.random.default_rng(args.seed))
    t_greedy = time.perf_counter() - t0
    f_greedy = selection.objective
    t0 = time.perf_counter()
    swap_refine(x, selection)
    t_swap = time.perf_counter() - t0
    print(f"greedy construction        : {t_greedy:8.2f} s   f = {f_greedy:.4f}")
    print(f"swap refinement (ours)     : {t_swap:8.2f} s   f = {selection.objective:.4f}  "
          f"swaps accepted = {selection.swaps}  (ends when no single swap lowers f)")
    print(f"greedy + swap total        : {t_greedy + t_swap:8.2f} s   target < 15 s")
    assert abs(selection.objective - pairwise_similarity_sum(x, selection.indices)) < 1e-6

    t0 = time.perf_counter()
    deltas = swap_deltas(selection)
    t_pass = time.perf_counter() - t0
    swaps_per_pass = args.k * (args.n - args.k)
    print(f"one full swap pass (ours)  : {t_pass:8.3f} s   = {swaps_per_pass:,} deltas, "
          f"{t_pass / swaps_per_pass * 1e9:.1f} ns per delta; min delta {np.min(deltas):.2e}")

    per_eval, _ = naive_best_swap_time(x, selection.indices.copy(), args.naive_evals, np.random.default_rng(1))
    naive_pass = per_eval * swaps_per_pass
    print(f"naive swap evaluation      : {per_eval * 1e6:8.1f} us per candidate swap (timed {args.naive_evals:,} "
          f"evaluations, recomputing f(S') each time)")
    print(f"naive full pass (EXTRAPOLATED from the timed evaluations): {naive_pass:,.0f} s "
          f"= {naive_pass / 3600:.1f} h; ours is {naive_pass / t_pass:,.0f}x faster per pass")

    start = random_start(x, args.k, np.random.default_rng(2))
    f_random = start.objective
    t0 = time.perf_counter()
    swap_refine(x, start)
    t_random_swap = time.perf_counter() - t0
    print(f"swap refinement from a random start: {t_random_swap:.2f} s, {start.swaps} swaps accepted, "
          f"f {f_random:.4f} -> {start.objective:.4f} (greedy+swap: {selection.objective:.4f}); "
          f"naive would need ~{start.swaps * naive_pass / 3600:.0f} h for the same swaps")


if __name__ == "__main__":
    main()
