"""Paired comparison of the acceptance of two runs (B - A, paired by question_id).

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speedbench.metrics.acceptance.formulas import acceptance_length_from_counts
from speedbench.metrics.acceptance.summary import COL_ACC, COL_AL_SUM, COL_STEPS, COL_VALID, request_columns
from speedbench.metrics.acceptance.tables import RequestAcceptance
from speedbench.metrics.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_NUM_RESAMPLES,
    DEFAULT_SEED,
    PairedDifference,
    paired_difference,
)
from speedbench.metrics.results import JsonDataclass


@dataclass
class AcceptanceComparison(JsonDataclass):
    """Run B minus run A over the requests both share (paired by ``question_id``)."""

    acceptance_length: PairedDifference
    acceptance_length_request_weighted: PairedDifference

    def to_dict(self) -> dict:
        return {
            "acceptance_length": self.acceptance_length.to_dict(),
            "acceptance_length_request_weighted": self.acceptance_length_request_weighted.to_dict(),
        }


def compare_acceptance(
    run_a: RequestAcceptance,
    run_b: RequestAcceptance,
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> AcceptanceComparison:
    """Difference in AL (B - A; step- and request-weighted) with paired bootstrap CIs.

    Requests are paired by ``question_id`` (turns were already pooled per id); requests
    present in only one run are left out and counted.
    """
    cols = [COL_STEPS, COL_ACC, COL_AL_SUM, COL_VALID]
    xa, xb = request_columns(run_a)[:, cols], request_columns(run_b)[:, cols]

    def step_weighted(s):
        return acceptance_length_from_counts(s[..., 0], s[..., 1])

    def request_weighted(s):
        with np.errstate(invalid="ignore", divide="ignore"):
            return s[..., 2] / s[..., 3]

    kw = dict(num_resamples=num_resamples, confidence=confidence, seed=seed)
    return AcceptanceComparison(
        acceptance_length=paired_difference(xa, run_a.question_ids, xb, run_b.question_ids, step_weighted, **kw),
        acceptance_length_request_weighted=paired_difference(
            xa, run_a.question_ids, xb, run_b.question_ids, request_weighted, **kw
        ),
    )
