"""Choosing k diverse prompts from a pool of unit-norm embeddings (pure numpy functions).

Objective (paper, Section 5): minimise the total pairwise cosine similarity inside the subset,
``f(S) = sum_{i<j in S} x_i . x_j``. Selectors:

- ``greedy_swap``: Algorithm 1, greedy construction from a seeded random start, then local swap
  refinement until no single swap lowers f (``greedy_swap.py``);
- ``qp``: the convex QP relaxation of Appendix C, ``min w'Gw, sum w = k, 0 <= w <= 1``, rounded to
  the k largest weights (``qp.py``);
- ``random``: uniform random subset (``random_select.py``), the baseline.
"""
from __future__ import annotations

import numpy as np

from speedbench.dataset_builder.selection.greedy_swap import greedy, greedy_swap_select, swap_refine
from speedbench.dataset_builder.selection.objective import mean_pairwise_similarity, pairwise_similarity_sum
from speedbench.dataset_builder.selection.qp import qp_select
from speedbench.dataset_builder.selection.random_select import random_select

SELECTORS = ("greedy_swap", "greedy", "qp", "random")


def select(embeddings: np.ndarray, k: int, selector: str = "greedy_swap", seed: int = 0) -> np.ndarray:
    """Indices (sorted) of the k rows chosen by ``selector``."""
    rng = np.random.default_rng(seed)
    if selector == "greedy_swap":
        chosen = greedy_swap_select(embeddings, k, rng).indices
    elif selector == "greedy":
        chosen = greedy(embeddings, k, rng).indices
    elif selector == "qp":
        chosen = qp_select(embeddings, k)
    elif selector == "random":
        chosen = random_select(len(embeddings), k, rng)
    else:
        raise ValueError(f"unknown selector {selector!r}; choose from {', '.join(SELECTORS)}")
    return np.sort(np.asarray(chosen, dtype=np.int64))


__all__ = ["SELECTORS", "greedy", "greedy_swap_select", "mean_pairwise_similarity",
           "pairwise_similarity_sum", "qp_select", "random_select", "select", "swap_refine"]
