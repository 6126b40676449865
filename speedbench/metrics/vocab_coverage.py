"""Vocabulary pruning coverage (the paper's Appendix J, Table 10).

An EAGLE-3 style drafter predicts over a pruned vocabulary ``V_d``, a subset of the target's
vocabulary ``V`` (typically the 32k most frequent target tokens of its training corpus). A target
token outside ``V_d`` can never be drafted, so a verification step that must emit it accepts no
draft there. The coverage of a multiset ``T`` of target output tokens is

    coverage(T, V_d) = |{t in T : t in V_d}| / |T|           (tokens counted with multiplicity)

and per group g (category, sub-category, language) it is the same ratio over the output tokens of
g's requests (token-weighted, not a mean of per-request shares).

Drafter vocabularies (EAGLE-3 / ``speculators`` checkpoints):

- ``d2t``: int offsets over the draft vocabulary, draft id ``d`` maps to target id
  ``d + d2t[d]``, so ``V_d = {d + d2t[d]}`` (what vLLM applies to drafted ids at inference);
- ``t2d``: bool mask over the target vocabulary, ``V_d = {t : t2d[t]}`` (used in training).

Top-k simulation (the paper's 16k / 32k / 64k rows): ``V_k`` is the ``k`` most frequent ids of a
count vector ``c`` (``c[t]`` = occurrences of id ``t`` in a corpus), ties broken by the smaller id
so the set is deterministic; ids never seen are never in ``V_k``.

Correlation across groups: Pearson's ``r`` of (coverage, AL) pairs and Spearman's ``rho``, the
Pearson ``r`` of their ranks (tied values share their mean rank); None below three groups or when
either side is constant.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from speedbench.metrics.validation import MetricInputError


class VocabInputError(MetricInputError):
    """A drafter vocabulary, count table or id list that cannot be used; the message names where
    (a :class:`MetricInputError`, as the package promises for every bad input)."""


def _int_vector(values, where: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise VocabInputError(f"{where}: must be a 1-D array, got shape {tuple(array.shape)}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise VocabInputError(f"{where}: must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _check_range(ids: np.ndarray, where: str, vocab_size: int | None) -> None:
    if ids.size and ids.min() < 0:
        bad = int(np.flatnonzero(ids < 0)[0])
        raise VocabInputError(f"{where}: id {int(ids[bad])} at index {bad} is negative")
    if vocab_size is not None and ids.size and ids.max() >= vocab_size:
        bad = int(np.flatnonzero(ids >= vocab_size)[0])
        raise VocabInputError(f"{where}: id {int(ids[bad])} at index {bad} is outside the target vocabulary "
                              f"of {vocab_size} ids")


def vocab_from_d2t(d2t, where: str = "d2t", target_vocab_size: int | None = None) -> np.ndarray:
    """Sorted target ids ``{d + d2t[d]}`` of an offset table; duplicates or out-of-range ids are errors."""
    offsets = _int_vector(d2t, where)
    targets = np.arange(offsets.size, dtype=np.int64) + offsets
    _check_range(targets, f"{where} (target id d + d2t[d])", target_vocab_size)
    unique = np.unique(targets)
    if unique.size != targets.size:
        raise VocabInputError(f"{where}: {targets.size - unique.size} draft ids map to a target id another "
                              "draft id already maps to (not a d2t offset table)")
    return unique


def vocab_from_t2d(t2d, where: str = "t2d") -> np.ndarray:
    """Sorted target ids where the bool mask is true."""
    mask = np.asarray(t2d)
    if mask.ndim != 1:
        raise VocabInputError(f"{where}: must be a 1-D mask over the target vocabulary, got shape {tuple(mask.shape)}")
    if mask.dtype != bool:
        raise VocabInputError(f"{where}: must be a bool mask, got dtype {mask.dtype}")
    return np.flatnonzero(mask).astype(np.int64)


def vocab_from_ids(ids: Sequence[int], where: str = "ids", target_vocab_size: int | None = None) -> np.ndarray:
    """Sorted unique ids of a plain id list."""
    values = _int_vector(ids, where) if len(ids) else np.zeros(0, np.int64)
    _check_range(values, where, target_vocab_size)
    return np.unique(values)


def top_k_vocab(counts: np.ndarray, k: int) -> np.ndarray:
    """Sorted ids of the ``k`` most frequent entries of a dense count vector (module doc: ties by id)."""
    if k <= 0:
        raise VocabInputError(f"top-k: k must be positive, got {k}")
    counts = np.asarray(counts, dtype=np.int64)
    seen = np.flatnonzero(counts > 0)
    # stable sort by descending count keeps the ascending-id order among ties
    order = seen[np.argsort(-counts[seen], kind="stable")]
    return np.sort(order[:k])


def token_counts(ids: np.ndarray, size: int | None = None) -> np.ndarray:
    """Dense count vector of a flat id array (``c[t]`` = occurrences of ``t``)."""
    ids = np.asarray(ids, dtype=np.int64)
    length = max(int(ids.max()) + 1 if ids.size else 0, size or 0)
    return np.bincount(ids, minlength=length).astype(np.int64)


def in_vocab(ids: np.ndarray, vocab: np.ndarray) -> np.ndarray:
    """Bool per id: is it in the id set ``vocab`` (a lookup table, not a search: O(ids + largest id))."""
    ids = np.asarray(ids, dtype=np.int64)
    if vocab.size == 0 or ids.size == 0:
        return np.zeros(ids.shape, dtype=bool)
    table = np.zeros(int(vocab.max()) + 2, dtype=bool)  # the last slot stands for every id above the vocabulary
    table[vocab] = True
    return table[np.minimum(ids, table.size - 1)]


@dataclass(frozen=True)
class GroupCoverage:
    """Per group: output tokens, tokens inside the vocabulary, and their ratio (None without tokens)."""

    tokens: dict[str, int]
    inside: dict[str, int]

    @property
    def share(self) -> dict[str, float | None]:
        return {g: (self.inside[g] / n if n else None) for g, n in self.tokens.items()}


def group_coverage(labels: Sequence[str], lengths: Sequence[int], inside: np.ndarray) -> GroupCoverage:
    """Coverage per label of requests whose tokens are concatenated (``lengths[i]`` each); ``inside``
    says per token whether it is in the vocabulary (:func:`in_vocab`)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    inside = np.asarray(inside, dtype=bool)
    if int(lengths.sum()) != inside.size:
        raise VocabInputError(f"coverage: the request lengths sum to {int(lengths.sum())} tokens, not {inside.size}")
    names, codes = np.unique(np.asarray([str(x) for x in labels], dtype=str), return_inverse=True) \
        if len(labels) else (np.zeros(0, str), np.zeros(0, np.int64))
    per_token = np.repeat(codes, lengths)
    totals = np.bincount(per_token, minlength=len(names))
    hits = np.bincount(per_token[inside], minlength=len(names))
    return GroupCoverage(tokens={str(n): int(t) for n, t in zip(names, totals)},
                         inside={str(n): int(h) for n, h in zip(names, hits)})


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=float)
    ranks[order] = np.arange(1, values.size + 1)
    _, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / np.bincount(inverse))[inverse]


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r (module doc); None below three points or when a side is constant."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size != b.size:
        raise VocabInputError(f"correlation: {a.size} x values but {b.size} y values")
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    a, b = a - a.mean(), b - b.mean()
    return float(np.clip((a @ b) / np.sqrt((a @ a) * (b @ b)), -1.0, 1.0))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the ranks (module doc)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size != b.size:
        raise VocabInputError(f"correlation: {a.size} x values but {b.size} y values")
    return pearson(_ranks(a), _ranks(b)) if a.size else None


__all__ = ["GroupCoverage", "VocabInputError", "group_coverage", "in_vocab", "pearson", "spearman", "token_counts",
           "top_k_vocab", "vocab_from_d2t", "vocab_from_ids", "vocab_from_t2d"]
