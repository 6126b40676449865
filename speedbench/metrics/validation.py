"""Input checks shared by the metric functions: clear errors naming the field and row.

Integer inputs (chunk sizes, counts) are checked *before* any cast, because a silent
``int(1.5) == 1`` would turn a caller's bug into a wrong acceptance length.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import itertools

import numpy as np


class MetricInputError(ValueError):
    """Bad input to a metric: the message names the field and, where known, the row."""


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def as_count_array(values, field: str, *, allow_negative: bool = False) -> np.ndarray:
    """Return ``values`` as a 1-D int64 array, rejecting non-integers, NaN, bools-as-floats and negatives."""
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged input
        raise MetricInputError(f"{field}: expected a flat list of integers ({exc})") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise MetricInputError(f"{field}: expected a flat list of integers, got shape {arr.shape}")
    return _to_int64(arr, field)


def _to_int64(arr: np.ndarray, field: str, row_of=None) -> np.ndarray:
    def where(i: int) -> str:
        return f" at row {row_of(i)}" if row_of else f" at index {i}"

    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64, copy=False)
    elif arr.dtype.kind == "b":
        raise MetricInputError(f"{field}: expected integers, got booleans")
    elif arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            i = _first_bad(bad)
            raise MetricInputError(
                f"{field}: expected integers, got {arr[i].item()!r}{where(i)} "
                "(non-integer values are rejected, not truncated)"
            )
        out = arr.astype(np.int64)
    else:
        # object arrays (mixed python types): check element by element
        flat = list(arr)
        for i, v in enumerate(flat):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                if isinstance(v, (float, np.floating)) and float(v).is_integer():
                    continue
                raise MetricInputError(
                    f"{field}: expected integers, got {v!r}{where(i)} "
                    "(non-integer values are rejected, not truncated)"
                )
        out = np.asarray([int(v) for v in flat], dtype=np.int64)
    if (out < 0).any():
        i = _first_bad(out < 0)
        raise MetricInputError(f"{field}: expected non-negative integers, got {out[i].item()}{where(i)}")
    return out


@dataclass(frozen=True)
class Ragged:
    """A list of integer sequences stored flat (CSR): row ``r`` is ``values[offsets[r]:offsets[r+1]]``."""

    values: np.ndarray
    offsets: np.ndarray

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row_index(self) -> np.ndarray:
        """The row number of every flat value."""
        return np.repeat(np.arange(self.num_rows), self.lengths)

    def row(self, r: int) -> np.ndarray:
        return self.values[self.offsets[r] : self.offsets[r + 1]]

    def select(self, row_mask: np.ndarray) -> "Ragged":
        """The rows where ``row_mask`` is True, in order."""
        row_mask = np.asarray(row_mask, dtype=bool)
        lengths = self.lengths[row_mask]
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Ragged(values=self.values[row_mask[self.row_index()]], offsets=offsets)


def as_ragged_counts(rows, field: str) -> Ragged:
    """Turn a list of integer lists (or numpy arrays) into a validated :class:`Ragged`.

    Non-integers, NaN and negative numbers are rejected with the row and position named.
    """
    if isinstance(rows, Ragged):
        return rows
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (Sequence, np.ndarray)):
        raise MetricInputError(f"{field}: expected a list of integer lists, got {type(rows).__name__}")
    row_types = {type(row) for row in rows}
    for r, row in enumerate(rows):
        if row_types <= {list, tuple, np.ndarray}:
            break  # the common case, checked once per type rather than once per row
        if isinstance(row, (str, bytes)) or not isinstance(row, (Sequence, np.ndarray)):
            raise MetricInputError(f"{field}: row {r} is not a flat list of integers: {row!r:.80}")
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if any(issubclass(t, np.ndarray) for t in row_types):
        arrays = [np.asarray(row) for row in rows]
        bad = [r for r, a in enumerate(arrays) if a.ndim != 1]
        if bad:
            raise MetricInputError(f"{field}: row {bad[0]} is not a flat list of integers")
        values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    else:
        # one conversion of all rows at once: much faster than one array per row
        try:
            values = np.asarray(list(itertools.chain.from_iterable(rows)))
        except (TypeError, ValueError):
            values = np.asarray(list(itertools.chain.from_iterable(rows)), dtype=object)
        if values.ndim != 1 or values.dtype.kind in "USO":
            # strings, None or nested lists: keep the original objects so the error names the right one
            values = np.asarray(list(itertools.chain.from_iterable(rows)) + [None], dtype=object)[:-1]
    if values.size == 0:
        values = values.astype(np.int64)

    def row_and_position(i: int) -> str:
        r = int(np.searchsorted(offsets, i, side="right") - 1)
        return f"{r}, position {i - offsets[r]}"

    values = _to_int64(values, field, row_of=row_and_position)
    if (values < 0).any():
        i = _first_bad(values < 0)
        r = int(np.searchsorted(offsets, i, side="right") - 1)
        raise MetricInputError(f"{field}: negative value {values[i].item()} at row {r}, position {i - offsets[r]}")
    return Ragged(values=values, offsets=offsets)


def as_float_array(values, field: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``values`` as a 1-D float64 array, rejecting non-numbers (and NaN unless allowed)."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"{field}: expected numbers ({exc})") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise MetricInputError(f"{field}: expected a flat list of numbers, got shape {arr.shape}")
    bad = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        i = _first_bad(bad)
        raise MetricInputError(f"{field}: non-finite value {arr[i].item()} at index {i}")
    return arr


def as_labels(values, n: int, field: str, default: str) -> np.ndarray:
    """Per-row string labels (categories, question ids); ``None`` means ``default`` for every row."""
    if values is None:
        return np.full(n, default, dtype=object)
    if isinstance(values, (str, bytes)):
        raise MetricInputError(f"{field}: expected one label per row, got a single string")
    labels = np.asarray([default if v is None else str(v) for v in values], dtype=object)
    if len(labels) != n:
        raise MetricInputError(f"{field}: got {len(labels)} labels for {n} rows")
    return labels
