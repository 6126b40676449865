"""Input handling shared by the evaluate modules under ``metrics/`` (no evaluate import here).

evaluate 0.4.6 encodes inputs with their declared ``datasets`` features before the
metric sees them: a float given to an int feature is silently truncated (1.5 -> 1), and
an optional input left out arrives as ``None`` and crashes the Arrow writer. The mixin
below checks int inputs first (rejecting non-integers with the input name and row) and
fills optional inputs with their defaults, on every path (``compute``, ``add_batch``, ``add``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from speedbench.metrics.validation import MetricInputError, as_count_array, as_ragged_counts


def _feature_kind(feature) -> tuple[str, str] | None:
    """('flat'|'nested', dtype) for Value / Sequence(Value) features, else None."""
    inner = getattr(feature, "feature", None)
    if inner is not None and hasattr(inner, "dtype"):
        return "nested", inner.dtype
    if isinstance(feature, list) and feature and hasattr(feature[0], "dtype"):
        return "nested", feature[0].dtype
    if hasattr(feature, "dtype"):
        return "flat", feature.dtype
    return None


def _is_int(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


def prepare_batch(features, batch: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Validate a batch of evaluate inputs against ``features`` and fill optional columns.

    - int features (flat or nested) must hold integers: floats such as 1.5, NaN, bools and
      negative numbers raise :class:`MetricInputError` naming the input and row;
    - float features must hold finite numbers;
    - a column in ``defaults`` that is missing or ``None`` becomes that default on every row.
    """
    lengths = {len(v) for k, v in batch.items() if v is not None and k not in defaults}
    n = lengths.pop() if len(lengths) == 1 else None
    out = {}
    for name, feature in features.items():
        column = batch.get(name)
        if column is None:
            if name in defaults:
                if n is None:
                    raise MetricInputError("inputs differ in length; cannot fill defaults")
                out[name] = [defaults[name]] * n
                continue
            raise MetricInputError(f"{name}: this input is required")
        if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
            raise MetricInputError(f"{name}: expected one value per row, got {type(column).__name__}")
        kind = _feature_kind(feature)
        if kind is not None:
            shape, dtype = kind
            if _is_int(dtype):
                if shape == "nested":
                    as_ragged_counts(column, name)
                else:
                    as_count_array(column, name)
            elif dtype.startswith("float"):
                rows = column if shape == "nested" else [column]
                for r, row in enumerate(rows):
                    try:
                        arr = np.asarray(row, dtype=np.float64)
                    except (TypeError, ValueError):
                        raise MetricInputError(f"{name}: non-numeric value in row {r}") from None
                    if not np.isfinite(arr).all():
                        raise MetricInputError(f"{name}: non-finite value in row {r}")
            elif dtype == "string":
                column = ["" if v is None else v for v in column]
                bad = [i for i, v in enumerate(column) if not isinstance(v, str)]
                if bad:
                    raise MetricInputError(f"{name}: expected strings, got {column[bad[0]]!r} at row {bad[0]}")
        out[name] = list(column) if isinstance(column, np.ndarray) else column
    return out


class ValidatedInputsMixin:
    """Put before ``evaluate.Metric`` in the bases; set ``input_defaults`` for optional inputs."""

    input_defaults: dict[str, Any] = {}

    def reshape_inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Hook for a module to adapt its inputs' shape before validation (default: unchanged)."""
        return batch

    # evaluate appends the module's inputs description to these docstrings: keep them non-empty
    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Validate and add a batch of inputs (see the module's inputs description)."""
        batch = prepare_batch(self._selected_features(), self.reshape_inputs(kwargs), self.input_defaults)
        return super().add_batch(**batch)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Validate and add one example (see the module's inputs description)."""
        batch = prepare_batch(self._selected_features(), {k: [v] for k, v in kwargs.items()}, self.input_defaults)
        return super().add(**{k: v[0] for k, v in batch.items()})

    def _selected_features(self):
        features = self.features
        if isinstance(features, list):
            features = features[0]
        return features


def column_or_none(values, empty="") -> list | None:
    """``None`` when every entry is the default ``empty`` (the input was not given)."""
    if values is None:
        return None
    values = list(values)
    return None if all(v == empty or v is None for v in values) else values


def ids_or_row_numbers(question_ids) -> list[str] | None:
    """Question ids with empty entries replaced by a row-unique placeholder; None if none given."""
    ids = column_or_none(question_ids)
    if ids is None:
        return None
    return [v if v else f"__row_{i}" for i, v in enumerate(ids)]
