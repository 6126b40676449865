"""JSON-safe conversion shared by every result dataclass (NaN and inf become ``None``)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Convert dataclasses, numpy scalars/arrays, tuples and dicts into plain JSON values.

    Non-finite floats become ``None`` so that ``json.dumps(..., allow_nan=False)`` succeeds.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


class JsonDataclass:
    """Mixin: ``to_dict()`` returns the fields as JSON-safe values."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
