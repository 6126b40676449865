"""The QP relaxation of Appendix C, solved by accelerated projected gradient (numpy only).

    minimise  w' G w   subject to  sum_i w_i = k,  0 <= w_i <= 1,     G = X X'

The objective is ``||X' w||^2``, so the gradient ``2 X (X' w)`` costs two matrix-vector products and
G is never formed. The projection onto the capped simplex ``{0 <= w <= 1, sum w = k}`` is
``clip(v - tau, 0, 1)`` with ``tau`` found by bisection. The relaxed solution is rounded to the k
candidates with the largest weights (ties broken by index).
"""
from __future__ import annotations

import numpy as np


def project_capped_simplex(v: np.ndarray, k: float, iterations: int = 60) -> np.ndarray:
    """Euclidean projection of v onto {w : 0 <= w <= 1, sum w = k}."""
    low, high = float(v.min()) - 1.0, float(v.max())
    for _ in range(iterations):
        tau = (low + high) / 2.0
        if np.clip(v - tau, 0.0, 1.0).sum() > k:
            low = tau
        else:
            high = tau
    return np.clip(v - (low + high) / 2.0, 0.0, 1.0)


def largest_singular_value_squared(x: np.ndarray, iterations: int = 50) -> float:
    vector = np.ones(x.shape[1]) / np.sqrt(x.shape[1])
    value = 0.0
    for _ in range(iterations):
        product = x.T @ (x @ vector)
        value = float(np.linalg.norm(product))
        if value == 0.0:
            return 0.0
        vector = product / value
    return value


def qp_relaxation(embeddings: np.ndarray, k: int, iterations: int = 500) -> np.ndarray:
    """The relaxed weights w (FISTA with step 1 / L, L = 2 sigma_max(X)^2)."""
    x = np.asarray(embeddings, dtype=np.float64)
    n = len(x)
    if not 0 < k <= n:
        raise ValueError(f"cannot choose {k} of {n} candidates")
    step = 1.0 / (2.0 * max(largest_singular_value_squared(x), 1e-12))
    w = np.full(n, k / n)
    y, t = w.copy(), 1.0
    for _ in range(iterations):
        gradient = 2.0 * (x @ (x.T @ y))
        w_next = project_capped_simplex(y - step * gradient, k)
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = w_next + ((t - 1.0) / t_next) * (w_next - w)
        w, t = w_next, t_next
    return w


def qp_select(embeddings: np.ndarray, k: int, iterations: int = 500) -> np.ndarray:
    w = qp_relaxation(embeddings, k, iterations)
    order = np.lexsort((np.arange(len(w)), -w))   # largest weight first, then lowest index
    return np.sort(order[:k])
