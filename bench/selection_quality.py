"""Selection quality: greedy+swap vs the QP relaxation vs random, and vs the exact optimum on tiny pools.

Figure: mean pairwise cosine similarity of the chosen subset (lower = more diverse), the quantity
the paper's Table 6 reports.

1. Pools of 2,000 clustered unit vectors (40 topics in d = 64, like embeddings of related prompts),
   k = 80, several seeds: greedy+swap, greedy alone, QP relaxation (Appendix C, top-k rounding),
   uniform random. Gaps are relative to greedy+swap.
2. Many tiny pools (n = 14, k = 5: 2,002 subsets each) solved exactly by enumeration: mean gap of
   each selector to the optimum, and how often it finds the optimum.

    .venv/bin/python bench/selection_quality.py [--pools 5] [--tiny 300]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from speedbench.dataset_builder.selection import select  # noqa: E402
from speedbench.dataset_builder.selection.brute_force import exact_minimum  # noqa: E402
from speedbench.dataset_builder.selection.objective import mean_pairwise_similarity, pairwise_similarity_sum  # noqa: E402

SELECTORS = ("greedy_swap", "greedy", "qp", "random")


def clustered_pool(rng, n: int, dim: int, topics: int, spread: float = 0.6) -> np.ndarray:
    centres = rng.normal(size=(topics, dim))
    weights = rng.dirichlet(np.full(topics, 0.7))           # uneven topic sizes, like real pools
    labels = rng.choice(topics, size=n, p=weights)
    x = centres[labels] + spread * rng.normal(size=(n, dim)) + 0.8   # + common direction: positive similarities
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=5)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--k", type=int, default=80)
    parser.add_argument("--tiny", type=int, default=300)
    args = parser.parse_args()

    print(f"1) {args.pools} clustered pools of {args.n} (d=64, 40 topics), k={args.k}: mean pairwise similarity")
    results = {s: [] for s in SELECTORS}
    times = {s: 0.0 for s in SELECTORS}
    for seed in range(args.pools):
        x = clustered_pool(np.random.default_rng(seed), args.n, 64, 40)
        for selector in SELECTORS:
            t0 = time.perf_counter()
            chosen = select(x, args.k, selector, seed=seed)
            times[selector] += time.perf_counter() - t0
            results[selector].append(mean_pairwise_similarity(x, chosen))
    ours = np.mean(results["greedy_swap"])
    print(f"   {'selector':<12} {'mean sim':>9} {'gap vs greedy+swap':>19} {'time/pool':>10}")
    for selector in SELECTORS:
        value = np.mean(results[selector])
        print(f"   {selector:<12} {value:9.4f} {(value - ours) / abs(ours) * 100:+18.1f}% {times[selector] / args.pools:9.2f}s")

    print(f"2) {args.tiny} tiny pools (n=14, k=5), exact optimum by enumeration of 2,002 subsets each")
    gaps = {s: [] for s in SELECTORS}
    for seed in range(args.tiny):
        x = clustered_pool(np.random.default_rng(10_000 + seed), 14, 8, 4)
        optimum, _ = exact_minimum(x, 5)
        for selector in SELECTORS:
            gaps[selector].append(pairwise_similarity_sum(x, select(x, 5, selector, seed=seed)) - optimum)
    print(f"   {'selector':<12} {'mean gap f-f*':>14} {'mean gap / pair':>16} {'optimal':>8}")
    for selector in SELECTORS:
        g = np.asarray(gaps[selector])
        print(f"   {selector:<12} {g.mean():14.4f} {g.mean() / 10:16.4f} {np.mean(g < 1e-9):8.0%}")


if __name__ == "__main__":
    main()
