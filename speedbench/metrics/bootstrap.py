"""Seeded bootstrap confidence intervals over requests, vectorised.

Every statistic this package reports is a smooth function of *per-request column sums*
(steps, accepted tokens, histogram counts, per-request AL, ...). A bootstrap resample of
requests is therefore a vector of multiplicities ``w`` (how often each request was drawn),
and the resampled sums are ``w @ X``. Drawing ``B`` resamples at once gives a ``(B, R)``
weight matrix and one matrix product, which is what makes 1,000 resamples over 100,000
requests take about a second.

Resampling is stratified when ``strata`` is given (by category, by default, in the
acceptance summary): each stratum keeps its size, which matches a benchmark whose
categories have a fixed number of prompts, and gives per-stratum intervals from the same
draws. The interval is the percentile interval ``[q_{(1-c)/2}, q_{(1+c)/2}]``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from speedbench.metrics.results import JsonDataclass
from speedbench.metrics.validation import MetricInputError
from speedbench.settings import NUM_RESAMPLES

DEFAULT_NUM_RESAMPLES = NUM_RESAMPLES
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
# Upper bound on the elements of one (resamples x requests) index block: keeps memory
# near 100 MB however large the run is.
_BLOCK_ELEMENTS = 4_000_000


def resampled_column_sums(
    columns: np.ndarray,
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    seed: int = DEFAULT_SEED,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """Column sums of ``num_resamples`` bootstrap resamples of the rows of ``columns``.

    Args:
        columns: ``(R, C)`` array, one row per request.
        strata: optional ``(R,)`` integer stratum per row (0..S-1); rows are resampled
            within their stratum.

    Returns:
        ``(B, S, C)`` array: for resample b and stratum s, ``sum_r w_{b,r} X_{r,:}`` over the
        rows of s, where ``w`` are multinomial multiplicities (with S = 1 without strata).
    """
    X = np.asarray(columns, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    R, C = X.shape
    if num_resamples < 1:
        raise MetricInputError(f"num_resamples: must be >= 1, got {num_resamples}")
    if strata is None:
        strata = np.zeros(R, dtype=np.int64)
    strata = np.asarray(strata, dtype=np.int64)
    S = int(strata.max()) + 1 if R else 1
    rng = np.random.default_rng(seed)
    out = np.zeros((num_resamples, S, C), dtype=np.float64)
    for s in range(S):
        members = np.flatnonzero(strata == s)
        n = members.size
        if n == 0:
            continue
        Xs = X[members]
        block = max(1, min(num_resamples, _BLOCK_ELEMENTS // n))
        for start in range(0, num_resamples, block):
            b = min(block, num_resamples - start)
            draws = rng.integers(0, n, size=(b, n))
            draws += (np.arange(b) * n)[:, None]
            weights = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n)
            out[start : start + b, s, :] = weights.astype(np.float64) @ Xs
    return out


def percentile_interval(samples: np.ndarray, confidence: float = DEFAULT_CONFIDENCE, axis: int = 0) -> np.ndarray:
    """Percentile interval along ``axis``: returns ``[low, high]`` stacked on a new last axis.

    NaN resamples (e.g. a ratio with an empty denominator) are ignored.
    """
    if not 0 < confidence < 1:
        raise MetricInputError(f"confidence: must be in (0, 1), got {confidence}")
    alpha = (1 - confidence) / 2
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low = np.nanquantile(samples, alpha, axis=axis)
            high = np.nanquantile(samples, 1 - alpha, axis=axis)
    return np.stack([low, high], axis=-1)


def bootstrap_ci(
    columns: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> np.ndarray:
    """Percentile CI of ``statistic(column_sums)`` under resampling of rows.

    ``statistic`` maps sums of shape ``(..., C)`` to values of shape ``(...)`` or ``(..., k)``.
    Returns ``[low, high]`` (shape ``(2,)`` or ``(k, 2)``).
    """
    sums = resampled_column_sums(columns, num_resamples=num_resamples, seed=seed)[:, 0, :]
    return percentile_interval(statistic(sums), confidence)


def align_by_id(ids_a, ids_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair two runs by id: returns ``(common_ids, index_in_a, index_in_b)`` sorted by id.

    Raises when an id repeats inside one run (pairing would be ambiguous).
    """
    a = np.asarray([str(x) for x in ids_a], dtype=object)
    b = np.asarray([str(x) for x in ids_b], dtype=object)
    for name, ids in (("a", a), ("b", b)):
        uniq, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise MetricInputError(f"question_ids of run {name}: id {uniq[counts > 1][0]!r} appears more than once")
    common, ia, ib = np.intersect1d(a, b, assume_unique=True, return_indices=True)
    return common, ia, ib


@dataclass
class PairedDifference(JsonDataclass):
    """``statistic(b) - statistic(a)`` over the requests both runs share, with its bootstrap CI."""

    value_a: float
    value_b: float
    difference: float
    difference_ci: list[float]
    num_paired: int
    num_only_a: int
    num_only_b: int
    confidence: float
    num_resamples: int
    seed: int


def paired_difference(
    columns_a: np.ndarray,
    ids_a,
    columns_b: np.ndarray,
    ids_b,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> PairedDifference:
    """Paired bootstrap of ``statistic(B) - statistic(A)`` over shared ids.

    The same multiplicities are applied to a request's row in both runs, so the
    per-prompt difficulty cancels and the interval is much narrower than two
    independent intervals.
    """
    A = np.asarray(columns_a, dtype=np.float64)
    B = np.asarray(columns_b, dtype=np.float64)
    A = A[:, None] if A.ndim == 1 else A
    B = B[:, None] if B.ndim == 1 else B
    common, ia, ib = align_by_id(ids_a, ids_b)
    if common.size == 0:
        raise MetricInputError("question_ids: the two runs share no question_id; nothing to pair")
    Ap, Bp = A[ia], B[ib]
    ca = A.shape[1]
    joined = np.hstack([Ap, Bp])
    sums = resampled_column_sums(joined, num_resamples=num_resamples, seed=seed)[:, 0, :]
    diffs = statistic(sums[:, ca:]) - statistic(sums[:, :ca])
    value_a = float(statistic(Ap.sum(axis=0)))
    value_b = float(statistic(Bp.sum(axis=0)))
    low, high = percentile_interval(diffs, confidence)
    return PairedDifference(
        value_a=value_a,
        value_b=value_b,
        difference=value_b - value_a,
        difference_ci=[float(low), float(high)],
        num_paired=int(common.size),
        num_only_a=int(len(A) - common.size),
        num_only_b=int(len(B) - common.size),
        confidence=confidence,
        num_resamples=num_resamples,
        seed=seed,
    )
