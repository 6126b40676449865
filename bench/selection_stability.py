"""Selection stability: how many selected rows change when the embeddings are perturbed.

Each pool is selected from (Algorithm 1, greedy + swap, k = 80), then every coordinate of every
embedding gets seeded Gaussian noise of scale ``eps`` (rows renormalised), and the selection is
repeated with the same seed. Printed per pool and eps: rows changed (summed over the seeds) and
how many of the seeds changed at all, with the near-tie rule (``exact.TIE_TOLERANCE``: ties within
the tolerance resolve by lowest index, swaps must gain more than it) and without it (tolerance 1e-9:
plain argmin on exact scores, swaps accepted above 1e-9 as before the rule).

Pools: a pool with exact ties (200 clustered rows, each present three times, as near-identical
prompts embed), synthetic clustered pools (``selection/synthetic.py``) of 600 and 8,000 rows, and, with
``--real FILE.npz`` (arrays of unit embeddings, one per category), real pools.

    .venv/bin/python bench/selection_stability.py [--seeds 10] [--eps 1e-6,1e-5,1e-4] [--real pools.npz]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from speedbench.dataset_builder.selection.exact import TIE_TOLERANCE  # noqa: E402
from speedbench.dataset_builder.selection.greedy_swap import greedy_swap_select  # noqa: E402
from speedbench.dataset_builder.selection.synthetic import clustered_pool  # noqa: E402


def perturb(x: np.ndarray, eps: float, seed: int) -> np.ndarray:
    y = x + np.float32(eps) * np.random.default_rng(seed).standard_normal(x.shape, dtype=np.float32)
    return (y / np.linalg.norm(y, axis=1, keepdims=True)).astype(np.float32)


def changed_rows(x: np.ndarray, eps: float, seed: int, tolerance: float, k: int) -> int:
    a = greedy_swap_select(x, k, np.random.default_rng(seed), tolerance=tolerance).indices
    b = greedy_swap_select(perturb(x, eps, 10_000 + seed), k, np.random.default_rng(seed), tolerance=tolerance).indices
    return len(set(a.tolist()) - set(b.tolist()))


def pool_with_copies(seed: int, distinct: int = 200, copies: int = 3) -> np.ndarray:
    x = np.repeat(clustered_pool(distinct, 512, n_clusters=24, seed=seed), copies, axis=0)
    return x[np.random.default_rng(seed).permutation(len(x))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", default="1e-6,1e-5,1e-4")
    parser.add_argument("--k", type=int, default=80)
    parser.add_argument("--real", default=None, help="npz of real unit embeddings, one array per category")
    args = parser.parse_args()
    pools: dict[str, list[np.ndarray]] = {"copies N=600": [pool_with_copies(s) for s in range(args.seeds)]}
    pools.update({f"synthetic N={n}": [clustered_pool(n, 512, n_clusters=24, seed=s) for s in range(args.seeds)]
                  for n in (600, 8000)})
    if args.real:
        pools.update({f"real {name}": [v] * args.seeds for name, v in np.load(args.real).items()})
    print(f"k = {args.k}, {args.seeds} seeds per pool; cells: rows changed in all seeds / seeds with any change")
    print(f"{'pool':<24} {'eps':>7} {'tie rule (tol ' + str(TIE_TOLERANCE) + ')':>22} {'no tie rule (tol 1e-9)':>20}")
    start = time.perf_counter()
    for name, xs in pools.items():
        for eps in (float(e) for e in args.eps.split(",")):
            cells = []
            for tolerance in (TIE_TOLERANCE, 1e-9):
                changes = [changed_rows(x, eps, seed, tolerance, args.k) for seed, x in enumerate(xs)]
                cells.append(f"{sum(changes)} / {sum(c > 0 for c in changes)}")
            print(f"{name:<24} {eps:>7.0e} {cells[0]:>22} {cells[1]:>20}", flush=True)
    print(f"({time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
