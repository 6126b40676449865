"""Acceptance formulas on histograms and rates (pure, vectorised over leading axes).

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

import numpy as np


def marginal_from_histogram(histogram: np.ndarray) -> np.ndarray:
    """``P(>= i) = sum_{j>=i} h_j / n`` for i = 1..K, from ``h_0..h_K`` on the last axis.

    Returns zeros where ``n = 0``.
    """
    h = np.asarray(histogram, dtype=np.float64)
    n = h.sum(axis=-1, keepdims=True)
    tail = np.flip(np.cumsum(np.flip(h, axis=-1), axis=-1), axis=-1)[..., 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, tail / np.where(n > 0, n, 1), 0.0)


def conditional_from_marginal(marginal: np.ndarray) -> np.ndarray:
    """``AR_i = P(>= i) / P(>= i-1)`` with ``P(>= 0) = 1``; 0 where position i-1 was never reached."""
    m = np.asarray(marginal, dtype=np.float64)
    prev = np.concatenate([np.ones(m.shape[:-1] + (1,)), m[..., :-1]], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prev > 0, m / np.where(prev > 0, prev, 1), 0.0)


def marginal_from_conditional(conditional: np.ndarray) -> np.ndarray:
    """``P(>= i) = prod_{j<=i} AR_j``."""
    return np.cumprod(np.asarray(conditional, dtype=np.float64), axis=-1)


def acceptance_length_from_conditional(conditional: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_{i=1..K} prod_{j<=i} AR_j`` (paper, Sec. 6)."""
    return 1.0 + marginal_from_conditional(conditional).sum(axis=-1)


def acceptance_length_from_marginal(marginal: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_{i=1..K} P(>= i)``."""
    return 1.0 + np.asarray(marginal, dtype=np.float64).sum(axis=-1)


def acceptance_length_from_histogram(histogram: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_j j h_j / sum_j h_j`` (mean step size); NaN where there are no steps."""
    h = np.asarray(histogram, dtype=np.float64)
    n = h.sum(axis=-1)
    accepted = (h * np.arange(h.shape[-1])).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 + accepted / n


def acceptance_length_from_counts(steps, accepted) -> np.ndarray:
    """``AL = 1 + accepted / steps``; NaN where steps = 0."""
    s = np.asarray(steps, dtype=np.float64)
    a = np.asarray(accepted, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 + a / s


def mean_acceptance_rate(accepted, drafted) -> np.ndarray:
    """``accepted / drafted`` (draft tokens accepted over draft tokens proposed); NaN where drafted = 0."""
    a = np.asarray(accepted, dtype=np.float64)
    d = np.asarray(drafted, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return a / d


def check_identities(acceptance_length: float, marginal, conditional, *, tolerance: float = 1e-9) -> list[str]:
    """The checks built into every summary; returns the violated ones as messages.

    - marginals ``P(>= i)`` are non-increasing in i and lie in [0, 1];
    - ``AL == 1 + sum_i P(>= i)``;
    - ``AL == 1 + sum_i prod_{j<=i} AR_j``.
    """
    problems: list[str] = []
    if marginal is None:
        return problems
    m = np.asarray(marginal, dtype=np.float64)
    if m.size and ((m < -tolerance).any() or (m > 1 + tolerance).any()):
        problems.append(f"marginal acceptance rates outside [0, 1]: {np.round(m, 6).tolist()}")
    if m.size > 1 and (np.diff(m) > tolerance).any():
        problems.append(f"marginal acceptance rates increase with position: {np.round(m, 6).tolist()}")
    if np.isfinite(acceptance_length):
        from_marginal = float(acceptance_length_from_marginal(m))
        if abs(from_marginal - acceptance_length) > max(tolerance, 1e-9 * acceptance_length):
            problems.append(
                f"AL identity broken: AL = {acceptance_length:.6f} but 1 + sum P(>=i) = {from_marginal:.6f}"
            )
        if conditional is not None:
            from_conditional = float(acceptance_length_from_conditional(conditional))
            if abs(from_conditional - acceptance_length) > max(1e-6, 1e-6 * acceptance_length):
                problems.append(
                    f"AL identity broken: AL = {acceptance_length:.6f} but "
                    f"1 + sum prod AR = {from_conditional:.6f}"
                )
    return problems
