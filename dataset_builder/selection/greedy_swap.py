"""Algorithm 1: greedy construction with local swap refinement.

Objective ``f(S) = sum_{i<j in S} x_i . x_j`` over unit-norm rows ``x_i`` of ``X`` (N x d).

Greedy (Phase 1): start from a seeded random index; keep ``m_j = sum_{i in S} x_i . x_j`` for every
candidate; add ``argmin_{j not in S} m_j`` and update ``m += X x_{i*}``: k matrix-vector products.

Swap (Phase 2): swapping ``o in S`` for ``c not in S`` changes the objective by

    Delta(o, c) = (m_c - x_c . x_o) - (m_o - x_o . x_o)

(the paper's ``sum_{j in S \\ {o}} (x_c . x_j - x_o . x_j)``). We keep ``m`` and the N x k matrix
``C[:, p] = X x_{S_p}`` (the columns greedy already computed), so every Delta is O(1) from
maintained sums: ``Delta = m_c - m_o - C[c, p(o)] + C[o, p(o)]``. Each step evaluates all
k (N - k) swaps at once (vectorised), applies the best one if it lowers f, and updates ``m`` and
one column of ``C`` with one matrix-vector product. It stops when no swap lowers f by more than
``tolerance`` (a local optimum for single swaps) or after ``max_swaps``.

Near-ties (``exact.py``): the maintained sums are float32 products, so each choice takes the
shortlist of candidates within ``tolerance`` plus the arithmetic's error bound of the best, and
decides on exact rescoring: lowest index among those within ``tolerance`` of the best. This is
the reference implementation; ``faiss_select.py`` makes the same choices over a FAISS index
without the N x k state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from speedbench.dataset_builder.selection.exact import (TIE_TOLERANCE, float32_error_bound, greedy_pick,
                                                        selected_sum, swap_pick)


@dataclass
class Selection:
    indices: np.ndarray                 # selected rows, in the order they entered (greedy) / positions (swap)
    similarity_sums: np.ndarray         # m: for every candidate, total similarity to the selected set
    columns: np.ndarray                 # C: N x k, C[:, p] = X @ x_{indices[p]}
    swaps: int = 0
    objective_trace: list[float] = field(default_factory=list)

    @property
    def objective(self) -> float:
        """f(S) = (sum_{i in S} m_i - sum_{i in S} x_i . x_i) / 2."""
        rows = self.indices
        self_sims = self.columns[rows, np.arange(len(rows))]
        return float((self.similarity_sums[rows].sum() - self_sims.sum()) / 2.0)


def _as_float(embeddings: np.ndarray) -> np.ndarray:
    x = np.asarray(embeddings)
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def first_row(n: int, k: int, rng: np.random.Generator, start: int | None) -> int:
    """The seeded random start of Algorithm 1 (shared by every backend)."""
    if not 0 < k <= n:
        raise ValueError(f"cannot choose {k} of {n} candidates")
    return int(rng.integers(n)) if start is None else int(start)


def greedy(embeddings: np.ndarray, k: int, rng: np.random.Generator, start: int | None = None,
           tolerance: float = TIE_TOLERANCE) -> Selection:
    """Phase 1 of Algorithm 1 (O(k N d))."""
    x = _as_float(embeddings)
    n = len(x)
    first = first_row(n, k, rng, start)
    sums = np.zeros(n, dtype=np.float64)
    columns = np.empty((n, k), dtype=np.float64)
    chosen = np.empty(k, dtype=np.int64)
    taken = np.zeros(n, dtype=bool)
    current = first
    for position in range(k):
        chosen[position] = current
        taken[current] = True
        columns[:, position] = x @ x[current]
        sums += columns[:, position]
        if position + 1 < k:
            masked = np.where(taken, np.inf, sums)
            slack = float32_error_bound(x.shape[1], x.dtype, terms=position + 1)
            shortlist = np.flatnonzero(masked <= masked.min() + tolerance + 2 * slack)
            current = greedy_pick(x, shortlist, selected_sum(x, chosen[:position + 1]), tolerance)
    return Selection(indices=chosen, similarity_sums=sums, columns=columns)


def swap_deltas(selection: Selection) -> np.ndarray:
    """Delta(o, c) for every position p (o = indices[p]) and every candidate c: an N x k matrix.

    Entries for candidates already selected are +inf (not a swap).
    """
    m, cols, rows = selection.similarity_sums, selection.columns, selection.indices
    positions = np.arange(len(rows))
    out_cost = m[rows] - cols[rows, positions]            # m_o - x_o . x_o, per position
    deltas = m[:, None] - cols - out_cost[None, :]          # m_c - x_c . x_o - (m_o - x_o . x_o)
    deltas[rows, :] = np.inf
    return deltas


def swap_delta(selection: Selection, position: int, candidate: int) -> float:
    """One Delta in O(1) from the maintained sums (what ``swap_deltas`` computes for all pairs)."""
    o = selection.indices[position]
    m, cols = selection.similarity_sums, selection.columns
    return float(m[candidate] - cols[candidate, position] - (m[o] - cols[o, position]))


def apply_swap(embeddings: np.ndarray, selection: Selection, position: int, candidate: int) -> None:
    """Replace ``indices[position]`` by ``candidate``, updating m and C with one matrix-vector product."""
    x = _as_float(embeddings)
    new_column = x @ x[candidate]
    selection.similarity_sums += new_column - selection.columns[:, position]
    selection.columns[:, position] = new_column
    selection.indices[position] = candidate
    selection.swaps += 1


def swap_refine(embeddings: np.ndarray, selection: Selection, max_swaps: int = 100_000,
                tolerance: float = TIE_TOLERANCE) -> Selection:
    """Phase 2: best-improvement single swaps until none lowers f by more than ``tolerance``."""
    x = _as_float(embeddings)
    k = len(selection.indices)
    # Delta = m_c - C[c,p] - m_o + C[o,p]: two sums of k products and two single products.
    slack = float32_error_bound(x.shape[1], x.dtype, terms=2 * k + 2)
    for _ in range(max_swaps):
        deltas = swap_deltas(selection)
        best = float(deltas.min())
        if not best < -tolerance + slack:
            break
        candidates, positions = np.nonzero(deltas <= best + tolerance + 2 * slack)
        pick = swap_pick(x, selection.indices, selected_sum(x, selection.indices), positions, candidates,
                         tolerance)
        if pick is None:
            break
        position, candidate, _ = pick
        apply_swap(x, selection, position, candidate)
        selection.objective_trace.append(selection.objective)
    return selection


def greedy_swap_select(embeddings: np.ndarray, k: int, rng: np.random.Generator,
                       max_swaps: int = 100_000, tolerance: float = TIE_TOLERANCE) -> Selection:
    """Algorithm 1 end to end."""
    return swap_refine(embeddings, greedy(embeddings, k, rng, tolerance=tolerance), max_swaps=max_swaps,
                       tolerance=tolerance)
