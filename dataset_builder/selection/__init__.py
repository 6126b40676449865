"""Choosing k diverse prompts from a pool of unit-norm embeddings.

Objective (paper, Section 5): minimise the total pairwise cosine similarity inside the subset,
``f(S) = sum_{i<j in S} x_i . x_j``. Selectors:

- ``greedy_swap``: Algorithm 1, greedy construction from a seeded random start, then local swap
  refinement until no single swap lowers f (``greedy_swap.py``);
- ``qp``: the convex QP relaxation of Appendix C, ``min w'Gw, sum w = k, 0 <= w <= 1``, rounded to
  the k largest weights (``qp.py``);
- ``random``: uniform random subset (``random_select.py``), the baseline.

Algorithm 1 has two backends that take the same decisions (``exact.py``: exact rescoring, near-ties
by lowest index): ``faiss`` (default; ``faiss_select.py`` over ``faiss_index.py``: no N x k state,
exact ``flat`` search or an approximate index for pools that do not fit) and ``numpy``
(``greedy_swap.py``: maintained N x k sums, O(1) swap deltas; the independent reference the FAISS
path is tested against).
"""
from __future__ import annotations

import numpy as np

from speedbench.dataset_builder.selection.greedy_swap import greedy, greedy_swap_select, swap_refine
from speedbench.dataset_builder.selection.objective import mean_pairwise_similarity, pairwise_similarity_sum
from speedbench.settings import SELECTORS
from speedbench.dataset_builder.selection.qp import qp_select
from speedbench.dataset_builder.selection.random_select import random_select

BACKENDS = ("faiss", "numpy")


def _algorithm1(embeddings: np.ndarray, k: int, rng: np.random.Generator, swaps: bool, backend: str,
                index: str, threads: int) -> np.ndarray:
    if backend == "numpy":
        return (greedy_swap_select(embeddings, k, rng) if swaps else greedy(embeddings, k, rng)).indices
    if backend != "faiss":
        raise ValueError(f"unknown selection backend {backend!r}; choose from {', '.join(BACKENDS)}")
    from speedbench.dataset_builder.selection.faiss_index import build_index
    from speedbench.dataset_builder.selection.faiss_select import faiss_greedy_swap

    store = np.ascontiguousarray(embeddings, dtype=np.float32) if index == "flat" else embeddings
    return faiss_greedy_swap(build_index(store, index, threads=threads), k, rng, swaps=swaps).indices


def select(embeddings: np.ndarray, k: int, selector: str = "greedy_swap", seed: int = 0,
           backend: str = "faiss", index: str = "flat", threads: int = 1) -> np.ndarray:
    """Indices (sorted) of the k rows chosen by ``selector`` (Algorithm 1 over ``backend`` /
    ``index``: the exact backends select the same rows)."""
    rng = np.random.default_rng(seed)
    if selector in ("greedy_swap", "greedy"):
        chosen = _algorithm1(embeddings, k, rng, selector == "greedy_swap", backend, index, threads)
    elif selector == "qp":
        chosen = qp_select(embeddings, k)
    elif selector == "random":
        chosen = random_select(len(embeddings), k, rng)
    else:
        raise ValueError(f"unknown selector {selector!r}; choose from {', '.join(SELECTORS)}")
    return np.sort(np.asarray(chosen, dtype=np.int64))


__all__ = ["BACKENDS", "SELECTORS", "greedy", "greedy_swap_select", "mean_pairwise_similarity",
           "pairwise_similarity_sum", "qp_select", "random_select", "select", "swap_refine"]
