"""Exact scores and the near-tie rule that every selection backend (numpy, FAISS) decides with.

Algorithm 1 makes two kinds of choice over unit rows ``x_i`` with ``s = sum_{i in S} x_i``:

- greedy: add ``argmin_{j not in S} m_j`` with ``m_j = x_j . s``;
- swap: replace ``o`` (position p) by ``c`` if ``Delta(o, c) = x_c . (s - x_o) - (x_o . s - x_o . x_o) < 0``.

A backend first finds, by whatever fast and slightly inexact arithmetic it uses (float32 BLAS,
a FAISS index), a *shortlist* guaranteed to hold every choice within ``tolerance`` of the best
(it widens its window by its own error bound, ``float32_error_bound``). The functions here then
rescore the shortlist exactly and decide:

- **near-ties resolve by lowest index**: of the candidates whose exact score is within
  ``TIE_TOLERANCE`` of the best, the one with the lowest pool index wins (for swaps the lowest
  candidate index, then the lowest position);
- **a swap is accepted only if it lowers the objective by more than** ``TIE_TOLERANCE``.

So two machines whose embeddings differ by rounding (about 1e-7 per coordinate for USE under
different batching) make the same choice wherever the choice was a near-tie, instead of
following the noise, and every backend makes the same choice as every other.

"Exact" is float64 with a fixed summation order: each score is the elementwise product summed
along the row (numpy's pairwise sum over d values), so it does not depend on how many rows are
scored together, on BLAS blocking or on thread count.
"""
from __future__ import annotations

import numpy as np

# Far above the score noise of a 1e-6 perturbation (about 1e-6 |s|, |s| ~ 30 for 80 rows of a
# real category) and far below any gap that matters for diversity (f(S) is ~400 for 80 rows).
TIE_TOLERANCE = 1e-3


def unit_roundoff(dtype) -> float:
    return float(np.finfo(np.float32 if np.dtype(dtype) == np.float16 else dtype).eps) / 2.0


def float32_error_bound(d: int, dtype=np.float32, terms: int = 1, scale: float = 1.0) -> float:
    """A bound on the error of ``terms`` inner products of length d computed in ``dtype``, each of
    magnitude at most ``scale`` (Higham: |fl(x.y) - x.y| <= d u |x||y| / (1 - d u)), doubled for margin."""
    u = unit_roundoff(dtype)
    return 2.0 * terms * scale * (d + 2) * u / (1.0 - (d + 2) * u)


def take_rows(x: np.ndarray, index) -> np.ndarray:
    """x[index]; rows of a memory-mapped file are read with ``os.pread``: fancy indexing a map
    faults in the pages around every row (fault-around, 64 KiB each), and scattered reads over a
    pool of millions would leave most of the file mapped and counted in the process's memory."""
    index = np.asarray(index, dtype=np.int64)
    if not (isinstance(x, np.memmap) and getattr(x, "filename", None) and x.flags.c_contiguous) or len(index) == 0:
        return np.asarray(x[index])
    import os

    row_bytes = x.shape[1] * x.itemsize
    out = np.empty((len(index), x.shape[1]), dtype=x.dtype)
    with open(x.filename, "rb", buffering=0) as handle:
        for i, row in enumerate(index.tolist()):
            out[i] = np.frombuffer(os.pread(handle.fileno(), row_bytes, int(x.offset) + row * row_bytes), dtype=x.dtype)
    return out


def rows64(x: np.ndarray, index) -> np.ndarray:
    return np.asarray(take_rows(x, index), dtype=np.float64)


def rowdot(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Exact-enough ``rows @ vector`` whose value per row is independent of the other rows."""
    return (rows * vector).sum(axis=-1)


def selected_sum(x: np.ndarray, chosen) -> np.ndarray:
    """s = sum of the selected rows in float64, added in position order."""
    total = np.zeros(x.shape[1], dtype=np.float64)
    for row in rows64(x, chosen):
        total += row
    return total


def exact_objective(x: np.ndarray, chosen) -> float:
    """f(S) = (|s|^2 - sum_i |x_i|^2) / 2 = sum_{i<j} x_i . x_j, in float64."""
    rows = rows64(x, chosen)
    s = selected_sum(x, chosen)
    return float((rowdot(s, s) - rowdot(rows, rows).sum()) / 2.0)


def greedy_pick(x: np.ndarray, shortlist, s: np.ndarray, tolerance: float = TIE_TOLERANCE) -> int:
    """The next greedy row: lowest index among the shortlisted rows with exact ``x_j . s`` within
    ``tolerance`` of the smallest."""
    shortlist = np.asarray(shortlist, dtype=np.int64)
    if len(shortlist) == 0:
        raise ValueError("empty greedy shortlist")
    scores = rowdot(rows64(x, shortlist), s)
    return int(shortlist[scores <= scores.min() + tolerance].min())


def swap_out_costs(x: np.ndarray, chosen, s: np.ndarray) -> np.ndarray:
    """r_p = x_o . s - x_o . x_o for each position p (o = chosen[p]): what removing o saves."""
    rows = rows64(x, chosen)
    return rowdot(rows, s) - rowdot(rows, rows)


def exact_swap_deltas(x: np.ndarray, chosen, s: np.ndarray, positions, candidates) -> np.ndarray:
    """Delta for each pair (positions[i], candidates[i]), exactly."""
    positions = np.asarray(positions, dtype=np.int64)
    out_rows = rows64(x, np.asarray(chosen)[positions])
    directions = s[None, :] - out_rows
    costs = rowdot(out_rows, s) - rowdot(out_rows, out_rows)
    return rowdot(rows64(x, candidates), directions) - costs


def swap_pick(x: np.ndarray, chosen, s: np.ndarray, positions, candidates,
              tolerance: float = TIE_TOLERANCE) -> tuple[int, int, float] | None:
    """The swap to apply among the shortlisted pairs, as (position, candidate, exact delta), or None.

    Accepted only if it lowers f by more than ``tolerance``; among the pairs within ``tolerance``
    of the best, the lowest candidate index, then the lowest position, wins.
    """
    positions = np.asarray(positions, dtype=np.int64)
    candidates = np.asarray(candidates, dtype=np.int64)
    if len(candidates) == 0:
        return None
    deltas = exact_swap_deltas(x, chosen, s, positions, candidates)
    best = float(deltas.min())
    if not best < -tolerance:
        return None
    ok = np.flatnonzero((deltas < -tolerance) & (deltas <= best + tolerance))
    winner = ok[np.lexsort((positions[ok], candidates[ok]))[0]]
    return int(positions[winner]), int(candidates[winner]), float(deltas[winner])
