"""The exact optimum by enumeration, for tiny pools (tests and the quality benchmark)."""
from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np


def exact_minimum(embeddings: np.ndarray, k: int, limit: int = 2_000_000) -> tuple[float, tuple[int, ...]]:
    """min over all k-subsets of sum_{i<j} x_i . x_j, with the minimising subset."""
    n = len(embeddings)
    if comb(n, k) > limit:
        raise ValueError(f"C({n},{k}) = {comb(n, k)} subsets is too many to enumerate")
    gram = np.asarray(embeddings, dtype=np.float64) @ np.asarray(embeddings, dtype=np.float64).T
    best, best_subset = np.inf, ()
    for subset in combinations(range(n), k):
        block = gram[np.ix_(subset, subset)]
        value = (block.sum() - np.trace(block)) / 2.0
        if value < best:
            best, best_subset = value, subset
    return float(best), best_subset
