"""Per-category breakdown: split any per-request metric by the category each request carries."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def group_codes(categories) -> tuple[np.ndarray, list[str]]:
    """Integer code per row and the sorted category names (code c is ``names[c]``)."""
    labels = np.asarray([str(c) for c in categories], dtype=object)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64), []
    names, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes.astype(np.int64), [str(n) for n in names]


def per_category(
    categories,
    compute: Callable[[np.ndarray], Any],
) -> dict[str, Any]:
    """``{category: compute(row_mask)}`` for every category, in sorted order.

    ``compute`` receives a boolean mask over the rows of that category, so any metric that
    takes per-request arrays can be split with
    ``per_category(cats, lambda m: summarize_latency(timings[m]))``.
    """
    codes, names = group_codes(categories)
    return {name: compute(codes == c) for c, name in enumerate(names)}
