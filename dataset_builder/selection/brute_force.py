"""The exact optimum by enumeration, for tiny pools (tests and the quality benchmark)."""
from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np


def exact_minimum(embeddings: np.ndarray, k: int, limit: int = 2_000_000) -> tuple[float, tuple[int, ...]]:
    """min over all k-subsets of sum_{i<j} x_i . x_j, with the minimising subset (first in lexicographic order)."""
    n = len(embeddings)
    if comb(n, k) > limit:
        raise ValueError(f"C({n},{k}) = {comb(n, k)} subsets is too many to enumerate")
    x = np.asarray(embeddings, dtype=np.float64)
    gram = x @ x.T
    subsets = np.array(list(combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
    values = np.zeros(len(subsets))
    for a, b in combinations(range(k), 2):
        values += gram[subsets[:, a], subsets[:, b]]
    best = int(np.argmin(values))
    return float(values[best]), tuple(int(i) for i in subsets[best])
