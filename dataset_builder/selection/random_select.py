"""Uniform random selection: the baseline the paper compares Algorithm 1 against."""
from __future__ import annotations

import numpy as np


def random_select(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if k > n:
        raise ValueError(f"cannot choose {k} of {n} candidates")
    return np.sort(rng.choice(n, size=k, replace=False))
