"""The diversity objective: pairwise cosine similarity inside a subset of unit-norm embeddings."""
from __future__ import annotations

import numpy as np


def pairwise_similarity_sum(embeddings: np.ndarray, subset) -> float:
    """f(S) = sum_{i<j in S} x_i . x_j, computed directly (O(k^2 d))."""
    x = np.asarray(np.asarray(embeddings)[np.asarray(subset, dtype=np.int64)], dtype=np.float64)
    gram = x @ x.T
    return float((gram.sum() - np.trace(gram)) / 2.0)


def mean_pairwise_similarity(embeddings: np.ndarray, subset) -> float:
    """f(S) / (k choose 2): the figure the paper's Figure 2 and Table 6 report."""
    k = len(subset)
    if k < 2:
        return float("nan")
    return pairwise_similarity_sum(embeddings, subset) / (k * (k - 1) / 2.0)


def similarity_matrix(embeddings: np.ndarray, subset) -> np.ndarray:
    x = np.asarray(np.asarray(embeddings)[np.asarray(subset, dtype=np.int64)], dtype=np.float64)
    return x @ x.T
