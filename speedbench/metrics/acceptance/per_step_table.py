"""Input form 2c: the engine's ordered per-step drafted and accepted counts -> the per-request table.

Part of ``speedbench.metrics.acceptance``; the per-position counts and their formulas are in
:mod:`speedbench.metrics.acceptance.per_step`.
"""
from __future__ import annotations

import numpy as np

from speedbench.metrics.acceptance.per_step import draft_length_counts, position_counts
from speedbench.metrics.acceptance.tables import RequestAcceptance, requests_from_histograms
from speedbench.metrics.validation import MetricInputError


def requests_from_per_step(per_step_drafted, per_step_accepted, *, draft_length: int | None = None,
                           categories=None, question_ids=None, finish_reasons=None,
                           exclude_max_tokens_requests: bool = False, decode_steps=None,
                           decode_tokens=None) -> RequestAcceptance:
    """Input form 2c: per request the ordered per-step drafted and accepted counts (vLLM's
    ``per_step_drafted`` / ``per_step_accepted``) -> the per-request table, with the position counts
    and the steps by drafted count; K = ``draft_length``, else the largest draft of any step."""
    drafted = [list(np.asarray(d, dtype=np.int64).reshape(-1)) for d in per_step_drafted]
    accepted = [list(np.asarray(a, dtype=np.int64).reshape(-1)) for a in per_step_accepted]
    if len(drafted) != len(accepted):
        raise MetricInputError(f"per_step_accepted: got {len(accepted)} rows for {len(drafted)}")
    k = int(draft_length) if draft_length is not None else max([max(d, default=0) for d in drafted] + [0])
    if k < 1:
        raise MetricInputError("per_step_drafted: no step drafted a token and no draft_length was given")
    try:
        counts = [position_counts(d, a, k) for d, a in zip(drafted, accepted)]
    except ValueError as error:
        row = next(i for i, (d, a) in enumerate(zip(drafted, accepted)) if _invalid(d, a, k))
        raise MetricInputError(f"per_step_drafted / per_step_accepted: row {row}: {error}") from None
    columns = {"position_counts": np.stack(counts) if counts else np.zeros((0, 3, k), np.int64),
               "draft_length_counts": np.stack([draft_length_counts(d, k) for d in drafted]) if drafted
               else np.zeros((0, k + 1), np.int64)}
    histograms = [np.bincount(np.asarray(a, dtype=np.int64), minlength=k + 1)[: k + 1].tolist() for a in accepted]
    return requests_from_histograms(histograms, draft_length=k, drafted=[int(sum(d)) for d in drafted],
                                    per_step=columns, categories=categories, question_ids=question_ids,
                                    finish_reasons=finish_reasons,
                                    exclude_max_tokens_requests=exclude_max_tokens_requests,
                                    decode_steps=decode_steps, decode_tokens=decode_tokens)


def _invalid(drafted, accepted, k: int) -> bool:
    try:
        position_counts(drafted, accepted, k)
    except ValueError:
        return True
    return False



__all__ = ["requests_from_per_step"]
