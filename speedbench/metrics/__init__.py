"""The math behind the SPEED-Bench metrics: small pure numpy functions, one concept per module.

The evaluate modules under ``metrics/`` and the client, report and leaderboard all call
this package. Every result is a dataclass with ``to_dict()`` returning JSON-safe values
(NaN/inf become ``None``). Bad input raises :class:`MetricInputError` (a ``ValueError``)
naming the field and row; non-integer counts are rejected, never truncated.

Modules
-------
``acceptance``  draft-token acceptance (K = draft length, h_j = steps accepting j drafts)
    Formulas: ``marginal_from_histogram`` (P(>=i)), ``conditional_from_marginal`` (AR_i),
    ``acceptance_length_from_conditional`` (AL = 1 + sum_i prod_{j<=i} AR_j),
    ``acceptance_length_from_histogram`` / ``_from_marginal`` / ``_from_counts``,
    ``mean_acceptance_rate`` (accepted / drafted), ``check_identities``.
    Step sizes: ``TrimRules`` (first_chunk="drop_if_lone", last_chunk="drop",
    exclude_max_tokens_requests=False, merged_chunks="exclude", zero_chunks="drop"),
    ``trim_step_sizes``, ``infer_draft_length`` (max step - 1, warns),
    ``detect_merged_chunks`` (step > K+1), ``histograms_from_steps``.
    Per-request table ``RequestAcceptance`` from the three input forms:
      1. ``requests_from_step_sizes(step_sizes, draft_length=None, categories=None,
         question_ids=None, finish_reasons=None, rules=TrimRules())``
      2. ``requests_from_histograms(histograms, ...)`` (h_0..h_K per request) and
         ``requests_from_counts(steps, accepted, drafted=None, draft_length=None, ...)``
      3. ``acceptance_from_counters(num_drafts, num_draft_tokens, num_accepted_tokens,
         accepted_per_position=None, categories=None)`` (run-level deltas -> summary)
    ``summarize_acceptance(table, num_resamples=1000, confidence=0.95, seed=0,
    stratify_by_category=True) -> AcceptanceSummary`` with ``acceptance_length``
    (step-weighted), ``acceptance_length_request_weighted``, their ``_ci``,
    ``conditional_acceptance_rate`` / ``marginal_acceptance_rate`` (K floats, with ``_ci``),
    ``mean_acceptance_rate``, ``acceptance_histogram`` (h_0..h_K), counts, max-tokens share,
    trimming report, ``checks_failed``, ``warnings`` and ``per_category`` (same keys).
    ``acceptance_from_step_sizes(step_sizes, **kw)`` does both steps.
    ``compare_acceptance(table_a, table_b, ...) -> AcceptanceComparison``: B - A in AL
    (step- and request-weighted) with paired bootstrap CIs, paired by question_id.
``bootstrap``   ``resampled_column_sums`` (vectorised, seeded, optionally stratified),
    ``percentile_interval``, ``bootstrap_ci``, ``align_by_id``, ``paired_difference`` ->
    ``PairedDifference``.
``speedup``     ``appendix_g_speedup(t_ar, t_sd, AL)`` (S = t_ar * AL / t_sd),
    ``estimate_speedup(t_ar_samples, t_sd_samples, AL, measured_speedup=None)`` ->
    ``SpeedupEstimate``; ``measured_speedup(tps_ar, tps_sd, latencies_ar=, latencies_sd=,
    question_ids_ar=, question_ids_sd=)`` -> ``MeasuredSpeedup``; ``relative_error``;
    ``best_draft_length(concurrency, draft_length, value)`` -> ``DraftLengthChoice``.
``latency``     ``timings_from_lists(send_times, chunk_times, chunk_tokens)`` ->
    ``RequestTimings``; ``per_request_latency`` (TTFT, E2E, tokens, user TPS, TPOT);
    ``step_latencies`` (gaps, TTFT excluded); ``tpot_per_token``; ``output_tps``;
    ``achieved_concurrency`` (Little's law); ``distribution_stats`` -> ``DistributionStats``
    (count/mean/std/min/p50/p90/p99/max); ``summarize_latency(timings,
    requested_concurrency=None, categories=None)`` -> ``LatencySummary``;
    ``pareto_frontier(user_tps, output_tps)`` -> indices.
``breakdown``   ``group_codes(categories)``, ``per_category(categories, compute)``.
``draft_length``  K of a run, one precedence for every reader: ``declared_draft_length`` (caller,
    --draft-length, engine.json, the server's description), ``reported_draft_length`` (the engine's
    records), ``resolve_draft_length``, ``statistics_draft_length``, ``run_speculation`` -> ``Speculation``.
``load_point``  one load point's ``point_latency(records, point)`` (latency summary and slot occupancy)
    and ``appendix_g_estimate(t_ar, t_sd, tokens_per_decode_step, chunks_are_steps)`` (None where it does
    not apply).
``validation``  ``MetricInputError``, ``Ragged`` (flat list-of-lists), ``as_count_array``,
    ``as_ragged_counts``, ``as_float_array``.
``results``     ``to_jsonable``, ``JsonDataclass``.
``losslessness``  ``first_divergence(sd_ids, baseline_ids)`` (None when identical),
    ``compare_outputs(sd, baseline, skipped=None)`` -> ``LosslessnessSummary`` (share identical,
    first divergence per request, ``NONDETERMINISM_NOTE``); ``pair_records(sd, baseline)`` (the
    requests both runs hold with identical prompt ids, and why others were skipped).
``vocab_coverage``  drafter vocabulary pruning (Appendix J): ``vocab_from_d2t`` (d + d2t[d]),
    ``vocab_from_t2d``, ``vocab_from_ids``, ``top_k_vocab(counts, k)`` (ties to the smaller id),
    ``token_counts``, ``in_vocab``, ``group_coverage(labels, lengths, inside)`` -> ``GroupCoverage``
    (token-weighted share per group), ``pearson``, ``spearman``; ``VocabInputError``.
``space_widget``  the page of a metric's Hub Space (``metrics/<name>/app.py``): ``build_widget(script,
    examples)`` (gradio, imported only when called), ``compute_json(script, config, arguments)``
    (bounded input, errors as ``{"error": ...}``), ``metric_card``.
``phases``      thinking vs answer: ``PhaseMarkers(boundary_ids, open_ids, prompt_state)``,
    ``answer_start(ids, markers)`` (first answer token, rule), ``split_record`` (a step belongs to the
    phase of its first token), ``phase_results(records, markers, draft_length)`` -> ``PhaseResults``
    (AL, per-position rates from chunks or vLLM's per-step detail, latency per phase).
"""
from speedbench.metrics.acceptance import (
    AcceptanceComparison,
    AcceptanceSummary,
    AcceptanceWarning,
    RequestAcceptance,
    TrimReport,
    TrimRules,
    acceptance_from_counters,
    acceptance_from_step_sizes,
    acceptance_length_from_conditional,
    acceptance_length_from_counts,
    acceptance_length_from_histogram,
    acceptance_length_from_marginal,
    check_identities,
    compare_acceptance,
    conditional_from_marginal,
    detect_merged_chunks,
    histograms_from_steps,
    infer_draft_length,
    marginal_from_conditional,
    marginal_from_histogram,
    mean_acceptance_rate,
    requests_from_counts,
    requests_from_histograms,
    requests_from_step_sizes,
    summarize_acceptance,
    trim_step_sizes,
)
from speedbench.metrics.bootstrap import (
    PairedDifference,
    align_by_id,
    bootstrap_ci,
    paired_difference,
    percentile_interval,
    resampled_column_sums,
)
from speedbench.metrics.breakdown import group_codes, per_category
from speedbench.metrics.latency import (
    DistributionStats,
    LatencySummary,
    PerRequestLatency,
    RequestTimings,
    achieved_concurrency,
    distribution_stats,
    output_tps,
    pareto_frontier,
    per_request_latency,
    step_latencies,
    summarize_latency,
    timings_from_lists,
    tpot_per_token,
)
from speedbench.metrics.results import JsonDataclass, to_jsonable
from speedbench.metrics.speedup import (
    DraftLengthChoice,
    MeasuredSpeedup,
    SpeedupEstimate,
    appendix_g_speedup,
    best_draft_length,
    estimate_speedup,
    measured_speedup,
    relative_error,
)
from speedbench.metrics.validation import MetricInputError, Ragged, as_count_array, as_float_array, as_ragged_counts
