"""Every acceptance figure of a per-request table, with bootstrap CIs, overall and per category.

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from speedbench.metrics.acceptance.formulas import (
    acceptance_length_from_counts,
    check_identities,
    conditional_from_marginal,
    marginal_from_histogram,
    mean_acceptance_rate,
)
from speedbench.metrics.acceptance.per_step import (
    ACCEPTED,
    DRAFTED,
    REACHED,
    check_position_identity,
    conditional_from_position_counts,
    draft_length_histogram,
    marginal_from_position_counts,
    variable_draft_length,
)
from speedbench.metrics.acceptance.tables import RequestAcceptance, requests_from_step_sizes
from speedbench.metrics.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_NUM_RESAMPLES,
    DEFAULT_SEED,
    percentile_interval,
    resampled_column_sums,
)
from speedbench.metrics.breakdown import group_codes
from speedbench.metrics.results import JsonDataclass


@dataclass
class AcceptanceSummary(JsonDataclass):
    """Every acceptance figure of one run (or one category of it). ``to_dict()`` is JSON-safe.

    ``acceptance_length`` is step-weighted (``1 + sum accepted / sum steps``);
    ``acceptance_length_request_weighted`` is the mean of per-request ALs. Intervals are
    ``[low, high]`` percentile bootstrap intervals over requests. Rates are lists of K
    floats, position 1 first; ``acceptance_histogram`` is ``h_0..h_K``.
    """

    acceptance_length: float
    acceptance_length_request_weighted: float | None
    acceptance_length_ci: list[float] | None
    acceptance_length_request_weighted_ci: list[float] | None
    conditional_acceptance_rate: list[float] | None
    conditional_acceptance_rate_ci: list[list[float]] | None
    marginal_acceptance_rate: list[float] | None
    marginal_acceptance_rate_ci: list[list[float]] | None
    mean_acceptance_rate: float | None
    mean_acceptance_rate_ci: list[float] | None
    acceptance_histogram: list[int] | None
    draft_length: int | None
    draft_length_inferred: bool
    num_requests: int
    num_requests_without_steps: int
    num_steps: int
    num_accepted_tokens: int
    num_draft_tokens: int
    num_max_tokens_requests: int | None
    max_tokens_share: float | None
    num_requests_excluded_max_tokens: int
    input_form: str
    trim_rules: dict | None
    trim_report: dict | None
    confidence: float
    num_resamples: int
    seed: int
    checks_failed: list[str]
    warnings: list[str]
    per_category: dict[str, dict] = field(default_factory=dict)
    # Step definitions (speedbench.metrics.acceptance.steps). ``acceptance_length`` is 1 + accepted / steps
    # over the steps this source counts (``step_kind``); the two named figures below say which:
    step_kind: str = "decode"
    acceptance_length_drafted: float | None = None  # 1 + accepted / drafted steps (vLLM's AL)
    tokens_per_decode_step: float | None = None  # emitted tokens / decode steps (Appendix G)
    tokens_per_decode_step_ci: list[float] | None = None
    num_decode_steps: int | None = None
    num_drafted_steps: int | None = None
    num_decode_tokens: int | None = None
    # Per-step draft lengths (speedbench.metrics.acceptance.per_step). ``draft_length_histogram``: steps by
    # the tokens they drafted ({"K": steps}; None when the source does not say per step);
    # ``variable_draft_length``: more than one K occurred (None when unknown); the per-position
    # counts D_i, R_i, A_i (K ints each) behind the rates; why the rates, or the drafted tokens and
    # the mean acceptance rate, are None when they are.
    draft_length_histogram: dict[str, int] | None = None
    variable_draft_length: bool | None = None
    position_drafted_steps: list[int] | None = None
    position_reached_steps: list[int] | None = None
    position_accepted_steps: list[int] | None = None
    per_position_null_reason: str | None = None
    drafted_tokens_null_reason: str | None = None


# column layout of the bootstrap matrix
COL_STEPS, COL_ACC, COL_DRAFT, COL_AL_SUM, COL_VALID, COL_DECODE, COL_DECODE_TOKENS = range(7)
COL_HIST = 7  # histogram columns start here


def request_columns(table: RequestAcceptance) -> np.ndarray:
    steps = table.steps.astype(np.float64)
    valid = steps > 0
    al = np.where(valid, acceptance_length_from_counts(np.where(valid, steps, 1), table.accepted), 0.0)
    # Without decode counts the decode columns are NaN, so their figures come out None.
    missing = np.full(steps.size, np.nan)
    decode = missing if table.decode_steps is None else table.decode_steps.astype(np.float64)
    decode_tokens = missing if table.decode_tokens is None else table.decode_tokens.astype(np.float64)
    cols = [steps, table.accepted.astype(np.float64), table.drafted.astype(np.float64), al, valid.astype(np.float64),
            decode, decode_tokens]
    base = np.stack(cols, axis=1)
    if table.histograms is not None:
        base = np.hstack([base, table.histograms.astype(np.float64)])
    if table.position_counts is not None:  # [D_i, R_i, A_i] flattened, after the histogram
        base = np.hstack([base, table.position_counts.reshape(steps.size, -1).astype(np.float64)])
    return base


def _layout(table: RequestAcceptance) -> tuple[int, int]:
    """(histogram columns, positions K of the position counts) of :func:`request_columns`; a
    histogram read as rates only when the table has neither position counts nor an unknown reason."""
    width = 0 if table.histograms is None else table.histograms.shape[1]
    k_pos = 0 if table.position_counts is None else table.position_counts.shape[-1]
    return width, k_pos


def _stats_from_sums(sums: np.ndarray, table: RequestAcceptance) -> dict[str, np.ndarray]:
    """All statistics from column sums (last axis), vectorised over leading axes."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "acceptance_length": acceptance_length_from_counts(sums[..., COL_STEPS], sums[..., COL_ACC]),
            "acceptance_length_request_weighted": sums[..., COL_AL_SUM] / sums[..., COL_VALID],
            "mean_acceptance_rate": mean_acceptance_rate(sums[..., COL_ACC], sums[..., COL_DRAFT]),
            "tokens_per_decode_step": sums[..., COL_DECODE_TOKENS] / sums[..., COL_DECODE],
        }
    width, k_pos = _layout(table)
    if table.per_position_unknown:
        return out  # K varied and nothing says per step which positions were drafted
    if k_pos:
        counts = sums[..., COL_HIST + width:].reshape(sums.shape[:-1] + (3, k_pos))
        out["marginal_acceptance_rate"] = marginal_from_position_counts(counts)
        out["conditional_acceptance_rate"] = conditional_from_position_counts(counts)
    elif width:
        marginal = marginal_from_histogram(sums[..., COL_HIST:COL_HIST + width])
        out["marginal_acceptance_rate"] = marginal
        out["conditional_acceptance_rate"] = conditional_from_marginal(marginal)
    return out


def _ci_list(samples: np.ndarray | None, confidence: float):
    if samples is None:
        return None
    return percentile_interval(samples, confidence).tolist()


def finite_or_none(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _build_summary(table, sums, boot, confidence, num_resamples, seed, member_mask, per_category) -> AcceptanceSummary:
    has_hist = table.histograms is not None
    point = _stats_from_sums(sums, table)
    cis = {k: None for k in point}
    if boot is not None:
        boot_stats = _stats_from_sums(boot, table)
        cis = {k: _ci_list(v, confidence) for k, v in boot_stats.items()}
    steps = table.steps[member_mask]
    mt = table.max_tokens_finished
    n_req = int(member_mask.sum())
    num_mt = None if mt is None else int(mt[member_mask].sum())
    hist = None
    if has_hist:
        hist = table.histograms[member_mask].sum(axis=0)
    al = float(point["acceptance_length"])
    marginal = point.get("marginal_acceptance_rate")
    conditional = point.get("conditional_acceptance_rate")
    checks = _checks(table, sums, al, marginal, conditional)
    return AcceptanceSummary(
        acceptance_length=al,
        acceptance_length_request_weighted=finite_or_none(point["acceptance_length_request_weighted"]),
        acceptance_length_ci=cis["acceptance_length"],
        acceptance_length_request_weighted_ci=cis["acceptance_length_request_weighted"],
        conditional_acceptance_rate=None if conditional is None else conditional.tolist(),
        conditional_acceptance_rate_ci=cis.get("conditional_acceptance_rate"),
        marginal_acceptance_rate=None if marginal is None else marginal.tolist(),
        marginal_acceptance_rate_ci=cis.get("marginal_acceptance_rate"),
        mean_acceptance_rate=None if table.drafted_unknown else finite_or_none(point["mean_acceptance_rate"]),
        mean_acceptance_rate_ci=None if table.drafted_unknown else cis["mean_acceptance_rate"],
        acceptance_histogram=None if hist is None else hist.astype(int).tolist(),
        draft_length=table.draft_length,
        draft_length_inferred=table.draft_length_inferred,
        num_requests=n_req,
        num_requests_without_steps=int((steps == 0).sum()),
        num_steps=int(steps.sum()),
        num_accepted_tokens=int(table.accepted[member_mask].sum()),
        num_draft_tokens=None if table.drafted_unknown else int(table.drafted[member_mask].sum()),
        num_max_tokens_requests=num_mt,
        max_tokens_share=None if num_mt is None or n_req == 0 else num_mt / n_req,
        num_requests_excluded_max_tokens=table.num_requests_excluded_max_tokens,
        input_form=table.input_form,
        trim_rules=None if table.trim_rules is None else table.trim_rules.to_dict(),
        trim_report=None if table.trim_report is None else table.trim_report.to_dict(),
        confidence=confidence,
        num_resamples=num_resamples,
        seed=seed,
        checks_failed=checks,
        warnings=list(table.warnings),
        per_category=per_category,
        **_step_figures(table, member_mask, al, point, cis),
        **_per_step_figures(table, member_mask, sums),
    )


def _checks(table: RequestAcceptance, sums, al: float, marginal, conditional) -> list[str]:
    """The identities: for a fixed K those of :func:`check_identities`; with position counts,
    ``sum_i A_i = accepted`` and ``A_i <= R_i <= D_i <= steps`` (the fixed-K identity
    ``AL = 1 + sum P(>= i)`` does not hold when steps drafted fewer than K)."""
    width, k_pos = _layout(table)
    if k_pos:
        counts = sums[COL_HIST + width:].reshape(3, k_pos)
        return check_position_identity(counts, int(sums[COL_STEPS]), int(sums[COL_ACC]))
    if marginal is None or not np.isfinite(al):
        return []
    return check_identities(al, marginal, conditional)


def _per_step_figures(table: RequestAcceptance, member_mask, sums) -> dict:
    """The per-step draft-length fields of :class:`AcceptanceSummary`."""
    width, k_pos = _layout(table)
    out: dict = {"per_position_null_reason": table.per_position_unknown,
                 "drafted_tokens_null_reason": table.drafted_unknown}
    if table.draft_length_counts is not None:
        counts = table.draft_length_counts[member_mask].sum(axis=0)
        out["draft_length_histogram"] = draft_length_histogram(counts)
        out["variable_draft_length"] = variable_draft_length(counts)
    elif table.k_varied:
        out["variable_draft_length"] = True  # fewer drafted tokens than steps x K: K varied
    elif table.draft_length and not table.drafted_from_k and table.step_kind == "drafted" \
            and int(sums[COL_DRAFT]) == int(sums[COL_STEPS]) * int(table.draft_length):
        # every drafted step drafted K tokens: one K
        out["draft_length_histogram"] = {str(table.draft_length): int(sums[COL_STEPS])} if sums[COL_STEPS] else {}
        out["variable_draft_length"] = False
    if k_pos:
        counts = sums[COL_HIST + width:].reshape(3, k_pos).astype(int)
        out.update(position_drafted_steps=counts[DRAFTED].tolist(), position_reached_steps=counts[REACHED].tolist(),
                   position_accepted_steps=counts[ACCEPTED].tolist())
    return out


def _step_figures(table: RequestAcceptance, member_mask, al: float, point: dict, cis: dict) -> dict:
    """The named step figures of :class:`AcceptanceSummary` (None where the source lacks them)."""
    decode = None if table.decode_steps is None else int(table.decode_steps[member_mask].sum())
    tokens = None if table.decode_tokens is None else int(table.decode_tokens[member_mask].sum())
    drafted = int(table.steps[member_mask].sum()) if table.step_kind == "drafted" else None
    return {
        "step_kind": table.step_kind,
        "acceptance_length_drafted": finite_or_none(al) if table.step_kind == "drafted" else None,
        "tokens_per_decode_step": finite_or_none(point["tokens_per_decode_step"]) if decode else None,
        "tokens_per_decode_step_ci": cis.get("tokens_per_decode_step") if decode else None,
        "num_decode_steps": decode, "num_drafted_steps": drafted, "num_decode_tokens": tokens,
    }


def summarize_acceptance(
    table: RequestAcceptance,
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    stratify_by_category: bool = True,
) -> AcceptanceSummary:
    """All acceptance figures with bootstrap CIs, overall and per category.

    Resampling is over requests, stratified by category by default (each category keeps its
    size, as in a benchmark with a fixed number of prompts per category), so the per-category
    intervals come from the same draws. ``num_resamples=0`` skips the intervals.
    """
    X = request_columns(table)
    codes, names = group_codes(table.categories)
    boot_by_stratum = None
    if num_resamples > 0 and table.num_requests > 0:
        strata = codes if stratify_by_category else None
        boot_by_stratum = resampled_column_sums(X, num_resamples=num_resamples, seed=seed, strata=strata)
    per_category = {}
    for c, name in enumerate(names):
        mask = codes == c
        boot_c = None
        if boot_by_stratum is not None and stratify_by_category:
            boot_c = boot_by_stratum[:, c, :]
        per_category[name] = _build_summary(
            table, X[mask].sum(axis=0), boot_c, confidence, num_resamples, seed, mask, {}
        ).to_dict()
        per_category[name].pop("per_category", None)
    boot_all = None if boot_by_stratum is None else boot_by_stratum.sum(axis=1)
    summary = _build_summary(
        table, X.sum(axis=0), boot_all, confidence, num_resamples, seed, np.ones(table.num_requests, bool), per_category
    )
    return summary


def acceptance_from_step_sizes(step_sizes, **kwargs) -> AcceptanceSummary:
    """Shortcut: :func:`requests_from_step_sizes` then :func:`summarize_acceptance`.

    Keyword arguments are split between the two (``num_resamples``, ``confidence``, ``seed``,
    ``stratify_by_category`` go to the summary).
    """
    summary_kw = {k: kwargs.pop(k) for k in ("num_resamples", "confidence", "seed", "stratify_by_category") if k in kwargs}
    return summarize_acceptance(requests_from_step_sizes(step_sizes, **kwargs), **summary_kw)
