"""Algorithm 1 (greedy + swap) over a FAISS index, with no N x k state.

With unit rows ``x_i`` and ``s = sum_{i in S} x_i``:

- **greedy**: ``m_j = x_j . s``, so the next row ``argmin_{j not in S} m_j`` is a maximum-inner-product
  query with ``-s``: one search per step.
- **swap**: replacing ``o`` (position p) by ``c`` changes the objective by
  ``Delta(o, c) = x_c . (s - x_o) - (m_o - 1) = m_c - x_c . x_o - r_p``, ``r_p = m_o - x_o . x_o``.
  Since ``x_c . x_o <= 1``, ``Delta(o, c) >= m_c - 1 - max_p r_p`` for every position: only
  candidates with small ``m_c`` can take part in the best swap. Each step asks the index for the
  rows with the smallest ``m`` (one query with ``-s``), computes their deltas against all k
  positions exactly (a T x k product, T ~ a few hundred to thousands, not N x k), and widens the
  query until the T-th returned ``m`` exceeds ``best delta found + tolerance + 1 + max_p r_p``
  (plus the index's error bound): then no unreturned candidate can be within the tolerance of
  the best, and the step is exact. That replaces the k queries ``x_o - s`` per step (a k x N
  product) by one query whose width the bound sets.

Every decision is taken by ``exact.greedy_pick`` / ``exact.swap_pick`` on exact rescoring of a
shortlist that holds every choice within the tolerance of the best, the same functions and rule
as the numpy path (``greedy_swap.py``), so over the exact ``flat`` index both select exactly the
same rows. Over an approximate index (IVF, HNSW, PQ) the shortlists are the index's top
``rerank`` rows, rescored exactly with the original vectors; the reported objective is always
recomputed exactly.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from speedbench.dataset_builder.selection.exact import (TIE_TOLERANCE, exact_objective, greedy_pick, rowdot,
                                                        rows64, selected_sum, swap_out_costs, swap_pick)
from speedbench.dataset_builder.selection.faiss_index import PoolIndex
from speedbench.dataset_builder.selection.greedy_swap import first_row

NORM_SLACK = 1e-4          # unit rows: |x_c . x_o| <= 1 + this (float32 normalisation)


@dataclass
class FaissSelection:
    indices: np.ndarray                   # selected rows, by position
    swaps: int = 0
    objective: float = float("nan")       # exact f(S)
    greedy_seconds: float = 0.0
    swap_seconds: float = 0.0
    searches: int = 0
    widest_query: int = 0
    trace: list[float] = field(default_factory=list)


def _lowest_m(index: PoolIndex, s: np.ndarray, taken: set[int], count: int):
    """(approximate m, ids) of up to ``count`` rows with the smallest x . s, selected rows dropped;
    and the approximate m of the last row the index returned (inf if it returned every row)."""
    scores, ids = index.search(-s, count)
    keep = ids >= 0
    scores, ids = -scores[keep].astype(np.float64), ids[keep].astype(np.int64)
    last = np.inf if len(ids) >= index.n else float(scores[-1]) if len(scores) else np.inf
    fresh = np.fromiter((i not in taken for i in ids), dtype=bool, count=len(ids))
    return scores[fresh], ids[fresh], last


def greedy_step(index: PoolIndex, chosen: list[int], tolerance: float, rerank: int, stats: FaissSelection) -> int:
    s = selected_sum(index.store, chosen)
    taken = set(chosen)
    count = len(chosen) + (64 if index.exact else min(rerank, 256))
    while True:
        m, ids, last = _lowest_m(index, s, taken, count)
        stats.searches += 1
        stats.widest_query = max(stats.widest_query, count)
        if not index.exact:
            # No error bound: estimate it from the returned rows (approximate vs exact m) and widen
            # until the unreturned rows are unlikely to hold the best, up to ``rerank`` rows.
            exact_m = _exact_m(index, ids, s)
            error = float(np.abs(exact_m - m).max()) if len(m) else 0.0
            if count >= rerank or last == np.inf or last - 2 * error > exact_m.min() + tolerance:
                return greedy_pick(index.store, ids, s, tolerance)
            count *= 4
            continue
        width = tolerance + 2 * index.error_bound(float(np.linalg.norm(s)))
        if len(m) and last > m.min() + width:
            return greedy_pick(index.store, ids[m <= m.min() + width], s, tolerance)
        if last == np.inf:
            return greedy_pick(index.store, ids, s, tolerance)
        count *= 4


def faiss_greedy(index: PoolIndex, k: int, rng: np.random.Generator, start: int | None = None,
                 tolerance: float = TIE_TOLERANCE, rerank: int = 256,
                 stats: FaissSelection | None = None) -> FaissSelection:
    """Phase 1: k - 1 queries with -s."""
    stats = stats or FaissSelection(indices=np.zeros(0, dtype=np.int64))
    began = time.perf_counter()
    chosen = [first_row(index.n, k, rng, start)]
    while len(chosen) < k:
        chosen.append(greedy_step(index, chosen, tolerance, rerank, stats))
    stats.indices = np.asarray(chosen, dtype=np.int64)
    stats.greedy_seconds += time.perf_counter() - began
    return stats


RESCORE_ROWS = 8192       # rows rescored at a time: bounds the float64 buffers of a wide query


def _exact_m(index: PoolIndex, ids: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.concatenate([rowdot(rows64(index.store, ids[a:a + RESCORE_ROWS]), s)
                           for a in range(0, len(ids), RESCORE_ROWS)] or [np.zeros(0)])


def _candidate_deltas(index: PoolIndex, ids: np.ndarray, selected: np.ndarray, s: np.ndarray,
                      out_costs: np.ndarray) -> np.ndarray:
    """Delta(p, c) for the returned candidates (rows) and all positions (columns), float64."""
    out = np.empty((len(ids), len(selected)))
    for a in range(0, len(ids), RESCORE_ROWS):
        rows = rows64(index.store, ids[a:a + RESCORE_ROWS])
        out[a:a + len(rows)] = (rows @ s)[:, None] - rows @ selected.T - out_costs[None, :]
    return out


def swap_step(index: PoolIndex, chosen: np.ndarray, tolerance: float, rerank: int,
              stats: FaissSelection, first_query: int = 1024) -> tuple[int, int, float] | None:
    """The swap Algorithm 1 applies next (as ``exact.swap_pick`` decides), or None at a local optimum."""
    s = selected_sum(index.store, chosen)
    selected = rows64(index.store, chosen)
    costs = swap_out_costs(index.store, chosen, s)
    taken = set(int(i) for i in chosen)
    count = max(4 * len(chosen), first_query) if index.exact else min(rerank, 4096)
    while True:
        approx_m, ids, last = _lowest_m(index, s, taken, count)
        stats.searches += 1
        stats.widest_query = max(stats.widest_query, count)
        deltas = _candidate_deltas(index, ids, selected, s, costs)
        best = float(deltas.min()) if deltas.size else np.inf
        bound = best + tolerance + 1.0 + NORM_SLACK + float(costs.max()) + 1e-9
        if index.exact:
            error = index.error_bound(float(np.linalg.norm(s)))
        else:   # estimated from the returned rows; widening stops at ``rerank`` rows
            error = 2 * float(np.abs(_exact_m(index, ids, s) - approx_m).max()) if len(ids) else 0.0
            if count >= rerank:
                break
        if last == np.inf or last > bound + error:
            break
        count *= 4
    # float64 products vs the exact row sums differ by ~1e-13: a margin keeps every near-tie.
    rows, positions = np.nonzero(deltas <= best + tolerance + 1e-9)
    return swap_pick(index.store, chosen, s, positions, ids[rows], tolerance)


def faiss_swap_refine(index: PoolIndex, selection: FaissSelection, max_swaps: int = 100_000,
                      tolerance: float = TIE_TOLERANCE, rerank: int = 4096, first_query: int = 1024) -> FaissSelection:
    """Phase 2: best-improvement single swaps until none lowers f by more than ``tolerance``."""
    began = time.perf_counter()
    chosen = selection.indices.copy()
    for _ in range(max_swaps):
        pick = swap_step(index, chosen, tolerance, rerank, selection, first_query)
        if pick is None:
            break
        position, candidate, _ = pick
        chosen[position] = candidate
        selection.swaps += 1
        selection.trace.append(exact_objective(index.store, chosen))
    selection.indices = chosen
    selection.swap_seconds += time.perf_counter() - began
    return selection


def faiss_greedy_swap(index: PoolIndex, k: int, rng: np.random.Generator, swaps: bool = True,
                      max_swaps: int = 100_000, tolerance: float = TIE_TOLERANCE, rerank: int = 4096,
                      swap_rerank: int = 65536, first_query: int = 1024) -> FaissSelection:
    """Algorithm 1 end to end over ``index``; ``objective`` is recomputed exactly from the store."""
    selection = faiss_greedy(index, k, rng, tolerance=tolerance, rerank=rerank)
    if swaps:
        faiss_swap_refine(index, selection, max_swaps=max_swaps, tolerance=tolerance, rerank=swap_rerank,
                          first_query=first_query)
    selection.objective = exact_objective(index.store, selection.indices)
    return selection
