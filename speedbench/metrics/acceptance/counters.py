"""Input form 3: acceptance from run-level counter deltas (no per-request rows).

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

import numpy as np

from speedbench.metrics.acceptance.per_step import per_position_unknown_reason

from speedbench.metrics.acceptance.formulas import (
    acceptance_length_from_counts,
    check_identities,
    conditional_from_marginal,
    mean_acceptance_rate,
)
from speedbench.metrics.acceptance.summary import AcceptanceSummary, finite_or_none
from speedbench.metrics.acceptance.tables import ALL_CATEGORY
from speedbench.metrics.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_SEED
from speedbench.metrics.breakdown import group_codes
from speedbench.metrics.validation import MetricInputError, as_count_array, as_labels, as_ragged_counts


# The AcceptanceSummary fields that counters never fill (no per-request rows, no intervals).
_NO_REQUESTS = dict(acceptance_length_request_weighted=None, acceptance_length_ci=None,
                    acceptance_length_request_weighted_ci=None, conditional_acceptance_rate_ci=None,
                    marginal_acceptance_rate_ci=None, mean_acceptance_rate_ci=None, acceptance_histogram=None,
                    draft_length_inferred=False, num_requests=0, num_requests_without_steps=0,
                    num_max_tokens_requests=None, max_tokens_share=None, num_requests_excluded_max_tokens=0,
                    input_form="counters", trim_rules=None, trim_report=None, confidence=DEFAULT_CONFIDENCE,
                    num_resamples=0, seed=DEFAULT_SEED, warnings=[])


def acceptance_from_counters(
    num_drafts,
    num_draft_tokens,
    num_accepted_tokens,
    accepted_per_position=None,
    *,
    categories=None,
    draft_length: int | None = None,
) -> AcceptanceSummary:
    """Input form 3: deltas of server counters over a run (vLLM / llama.cpp Prometheus
    ``spec_decode_num_drafts``, ``..._num_draft_tokens``, ``..._num_accepted_tokens``,
    ``..._num_accepted_tokens_per_pos{position=i}``).

    Each argument is one value per run (or per category run); rows with the same category
    are summed. ``AL = 1 + accepted / drafts`` over drafted steps (a counter "draft" is a step
    that carried one); ``accepted_per_position[i] / drafts`` is the *marginal* ``P(>= i+1)``; the
    conditional rates are ratios of consecutive marginals. There are no per-request rows, so no
    request-weighted AL and no intervals. With ``draft_length`` K, drafted tokens fewer than
    drafts x K mean K varied: the counters divide accepted-at-i by every draft, so a step that
    drafted fewer than i tokens reads as a rejection at i, and the per-position rates are left
    None with the reason (:func:`speedbench.metrics.acceptance.per_step.per_position_unknown_reason`).
    """
    drafts = as_count_array(num_drafts, "num_drafts")
    tokens = as_count_array(num_draft_tokens, "num_draft_tokens")
    accepted = as_count_array(num_accepted_tokens, "num_accepted_tokens")
    n = drafts.size
    for name, arr in (("num_draft_tokens", tokens), ("num_accepted_tokens", accepted)):
        if arr.size != n:
            raise MetricInputError(f"{name}: got {arr.size} values for {n} rows")
    per_pos = _per_position_matrix(accepted_per_position, n)
    codes, names = group_codes(as_labels(categories, n, "categories", default=ALL_CATEGORY))

    def one(mask) -> AcceptanceSummary:
        pp = None if per_pos is None else per_pos[mask].sum(axis=0)
        return _counter_summary(int(drafts[mask].sum()), int(tokens[mask].sum()), int(accepted[mask].sum()), pp,
                                draft_length)

    per_category = {}
    for c, name in enumerate(names):
        per_category[name] = one(codes == c).to_dict()
        per_category[name].pop("per_category", None)
    summary = one(np.ones(n, dtype=bool))
    summary.per_category = per_category
    return summary


def _per_position_matrix(accepted_per_position, n: int) -> np.ndarray | None:
    """Accepted-per-position counts as an ``(n, K)`` matrix (one flat list allowed for one run)."""
    if accepted_per_position is None:
        return None
    app = accepted_per_position
    if n == 1 and len(app) and np.ndim(app[0]) == 0:
        app = [app]  # one run given as a flat list of positions
    rows = as_ragged_counts(app, "accepted_per_position")
    if rows.num_rows != n:
        raise MetricInputError(f"accepted_per_position: got {rows.num_rows} rows for {n} counter rows")
    width = int(rows.lengths.max()) if n else 0
    out = np.zeros((n, width), dtype=np.int64)
    out[rows.row_index(), np.arange(rows.values.size) - np.repeat(rows.offsets[:-1], rows.lengths)] = rows.values
    return out


def _counter_summary(drafts: int, tokens: int, accepted: int, per_position: np.ndarray | None,
                     draft_length: int | None = None) -> AcceptanceSummary:
    al = float(acceptance_length_from_counts(drafts, accepted))
    marginal = conditional = None
    k = None
    unknown = per_position_unknown_reason(tokens, drafts, draft_length)
    if unknown is not None:
        unknown = unknown.replace("the engine reported no per-step drafted counts",
                                  "the counters count accepted-at-position-i over every draft")
    if per_position is not None and drafts == 0:  # no step drafted a position: nothing is known of any
        k = int(per_position.size)
        unknown = "no drafted step was counted (0 drafts), so no position was drafted"
    elif per_position is not None and unknown is not None:
        k = int(per_position.size)
    elif per_position is not None:
        k = int(per_position.size)
        marginal = per_position / drafts
        conditional = conditional_from_marginal(marginal)
    elif drafts > 0 and tokens % drafts == 0:
        k = tokens // drafts  # every drafted step proposes K tokens
    checks = check_identities(al, marginal, conditional) if marginal is not None and np.isfinite(al) else []
    if per_position is not None and int(per_position.sum()) != accepted:
        checks.append(f"sum of accepted_per_position ({int(per_position.sum())}) != num_accepted_tokens ({accepted})")
    return AcceptanceSummary(
        acceptance_length=al, conditional_acceptance_rate=None if conditional is None else conditional.tolist(),
        marginal_acceptance_rate=None if marginal is None else np.asarray(marginal).tolist(),
        mean_acceptance_rate=finite_or_none(mean_acceptance_rate(accepted, tokens)), draft_length=k,
        num_steps=drafts, num_accepted_tokens=accepted, num_draft_tokens=tokens, checks_failed=checks,
        step_kind="drafted", acceptance_length_drafted=finite_or_none(al), num_drafted_steps=drafts,
        per_position_null_reason=unknown, variable_draft_length=True if unknown and drafts else None,
        **{**_NO_REQUESTS, "warnings": []})
