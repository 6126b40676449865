"""Acceptance of draft tokens: histogram, per-position rates and acceptance length (AL).

Notation (paper, Sec. 6 "Metrics"; docs/metrics.md): K = draft length, a
*step* = one verification forward pass, which emits ``1 + j`` tokens when it accepted
``j`` of the K draft tokens (0 <= j <= K). ``h_j`` = number of steps that accepted exactly
``j`` draft tokens, ``n = sum_j h_j``.

- marginal       ``P(>= i) = sum_{j >= i} h_j / n``                      (i = 1..K)
- conditional    ``AR_i = P(>= i) / P(>= i-1)``, ``P(>= 0) = 1``; a position that is
  never reached has rate 0 (it is probability mass 0, never skipped)
- acceptance length ``AL = 1 + sum_{i=1..K} prod_{j<=i} AR_j = 1 + sum_i P(>= i)
  = 1 + sum_j j h_j / n = 1 + accepted / steps`` (the 1 is the token the target always emits)
- mean acceptance rate ``accepted / drafted`` (= (AL - 1) / K for fixed K)

*Step-weighted* AL pools all steps of all requests (``1 + sum accepted / sum steps``);
*request-weighted* AL is the mean of per-request ALs (what the published reference
reports). They differ whenever long requests accept differently from short ones.

Inputs come in three forms (engines differ, see docs/engine-wire-formats.md), each turned
into one :class:`RequestAcceptance` table (one row per request):

1. streamed chunk sizes per request -> :func:`requests_from_step_sizes`
   (trimming rules in :class:`TrimRules`; a step larger than K+1 is a merged chunk);
2. per-request histograms ``h_0..h_K`` -> :func:`requests_from_histograms`, or
   ``(steps, accepted, drafted)`` counts -> :func:`requests_from_counts`, or the engine's ordered
   per-step drafted and accepted counts -> :func:`requests_from_per_step` (K may vary per step:
   position i is counted over the steps that drafted it, ``per_step``);
3. run-level counter deltas -> :func:`acceptance_from_counters` (no per-request rows, so
   no request-weighted AL and no CI).

:func:`summarize_acceptance` computes every figure with seeded bootstrap CIs overall and
per category; :func:`compare_acceptance` pairs two runs by ``question_id``.

One module per concept (this package re-exports the figures' functions): ``formulas``
(histograms, rates, AL identities), ``trimming`` (chunk trimming, K, merged chunks), ``tables``
(the per-request table and its builders), ``summary`` (figures with bootstrap CIs), ``counters``
(run-level counter deltas), ``comparison`` (paired comparison of two runs), ``steps`` (decode
step vs drafted step), ``draft_length`` (K of a run), ``from_records`` (run records -> acceptance,
which source is primary), ``counter_sources`` (each engine's Prometheus counters -> acceptance),
``agreement`` (the sources set side by side) and ``per_step`` (per-step draft lengths: rates by
position when K varies from step to step, the draft-length histogram).
"""
from __future__ import annotations

from speedbench.metrics.acceptance.comparison import AcceptanceComparison, compare_acceptance
from speedbench.metrics.acceptance.counters import acceptance_from_counters
from speedbench.metrics.acceptance.formulas import (
    acceptance_length_from_conditional,
    acceptance_length_from_counts,
    acceptance_length_from_histogram,
    acceptance_length_from_marginal,
    check_identities,
    conditional_from_marginal,
    marginal_from_conditional,
    marginal_from_histogram,
    mean_acceptance_rate,
)
from speedbench.metrics.acceptance.per_step import (
    conditional_from_position_counts,
    draft_length_histogram,
    marginal_from_position_counts,
    position_counts,
    variable_draft_length,
)
from speedbench.metrics.acceptance.per_step_table import requests_from_per_step
from speedbench.metrics.acceptance.summary import AcceptanceSummary, acceptance_from_step_sizes, summarize_acceptance
from speedbench.metrics.acceptance.tables import (
    ALL_CATEGORY,
    MAX_TOKENS_REASONS,
    RequestAcceptance,
    requests_from_counts,
    requests_from_histograms,
    requests_from_step_sizes,
)
from speedbench.metrics.acceptance.trimming import (
    AcceptanceWarning,
    TrimReport,
    TrimRules,
    detect_merged_chunks,
    histograms_from_steps,
    infer_draft_length,
    trim_step_sizes,
)
from speedbench.metrics.results import to_jsonable

__all__ = [
    "AcceptanceComparison",
    "AcceptanceSummary",
    "AcceptanceWarning",
    "RequestAcceptance",
    "TrimReport",
    "TrimRules",
    "acceptance_from_counters",
    "acceptance_from_step_sizes",
    "acceptance_length_from_conditional",
    "acceptance_length_from_counts",
    "acceptance_length_from_histogram",
    "acceptance_length_from_marginal",
    "check_identities",
    "compare_acceptance",
    "conditional_from_marginal",
    "conditional_from_position_counts",
    "draft_length_histogram",
    "marginal_from_position_counts",
    "position_counts",
    "requests_from_per_step",
    "variable_draft_length",
    "detect_merged_chunks",
    "histograms_from_steps",
    "infer_draft_length",
    "marginal_from_conditional",
    "marginal_from_histogram",
    "mean_acceptance_rate",
    "requests_from_counts",
    "requests_from_histograms",
    "requests_from_step_sizes",
    "summarize_acceptance",
    "to_jsonable",
    "trim_step_sizes",
]

