"""The best draft length per batch size, over repeats: median, spread, and when the choice is uncertain.

For one workload, one SD method and its baseline, at one concurrency, each candidate K (the
baseline counts as K = 0: no speculation) has one output throughput per repeat. The choice is
the K with the highest median. Spread is the median absolute deviation (MAD, unscaled:
``median(|x - median(x)|)``) over the repeats. The choice is *uncertain* when the runner-up's
median is within the two candidates' spreads (``best - runner_up <= MAD_best + MAD_runner_up``):
the repeats do not separate them. With a single repeat there is no spread to judge by, and the
choice says so instead of claiming certainty.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Candidate:
    k: int
    values: list[float]

    @property
    def median(self) -> float:
        return float(np.median(self.values))

    @property
    def mad(self) -> float | None:
        """None for a single value: a spread was not measured."""
        if len(self.values) < 2:
            return None
        return float(np.median(np.abs(np.asarray(self.values) - self.median)))


@dataclass
class Choice:
    best_k: int
    best: Candidate
    runner_up: Candidate | None
    uncertain: bool | None  # None: one repeat, no spread measured
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def note(self) -> str:
        if self.runner_up is None:
            return "only one candidate"
        if self.uncertain is None:
            return "one repeat: spread not measured"
        gap = self.best.median - self.runner_up.median
        if self.uncertain:
            return (f"uncertain: K={self.runner_up.k} is {gap:.4g} below, within the spread "
                    f"(MAD {self.best.mad:.4g} + {self.runner_up.mad:.4g})")
        return f"K={self.runner_up.k} is {gap:.4g} below, beyond the spread"


def choose(values_by_k: dict[int, list[float]]) -> Choice:
    """The K with the highest median (ties: the smaller K, the cheaper draft)."""
    candidates = [Candidate(k, list(v)) for k, v in sorted(values_by_k.items()) if v]
    if not candidates:
        raise ValueError("no candidate has a value")
    ranked = sorted(candidates, key=lambda c: (-c.median, c.k))
    best = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    uncertain = None
    if runner_up is not None and min(len(best.values), len(runner_up.values)) > 1:
        uncertain = bool(best.median - runner_up.median <= best.mad + runner_up.mad)
    return Choice(best_k=best.k, best=best, runner_up=runner_up, uncertain=uncertain, candidates=candidates)
