"""Every figure on the board, recomputed from the raw per-request records with the metrics core.

Nothing a submitter computed is used: ``results.json`` is kept in the bundle for reference only.

- acceptance: AL (step- and request-weighted) with bootstrap CIs, overall and per category,
  from the SD runs of the qualitative split (or, without one, from every SD run); from the
  engine's exact per-request statistics when every record has them, else from the streamed
  chunk sizes (``speedbench.metrics.acceptance.from_records``, the path the client's results and the
  report use too; ``acceptance_source`` says which);
- throughput: per run and load point, output TPS, user TPS, step latency and AL;
- speedup: at each load point of an SD run on a throughput bucket (ISL) that has a baseline
  (autoregressive) run at the same bucket and concurrency: the measured ratio of output TPS,
  and the Appendix-G estimate ``t_ar * AL / t_sd`` from mean step latencies, AL being the tokens
  per decode step (``t_sd`` is the mean over all decode steps, drafted or not).
"""
from __future__ import annotations

import numpy as np

from speedbench.metrics.acceptance import RequestAcceptance, compare_acceptance, summarize_acceptance
from speedbench.metrics.load_point import appendix_g_estimate, point_concurrency, point_latency
from speedbench.metrics.speedup import measured_speedup
from speedbench.metrics.acceptance.draft_length import declared_variable_draft_length
from speedbench.metrics.acceptance.from_records import primary_table
from speedbench.metrics.results import to_jsonable
from speedbench.analysis.run_folder import RunFolder
from speedbench.analysis.selection import acceptance_records, acceptance_runs
from speedbench.settings import NUM_RESAMPLES

METRICS_VERSION = "1"
SEED = 0
_AL_KEYS = ("acceptance_length", "acceptance_length_ci", "acceptance_length_request_weighted",
            "acceptance_length_request_weighted_ci", "mean_acceptance_rate", "conditional_acceptance_rate",
            "num_requests", "num_steps", "max_tokens_share", "step_kind", "acceptance_length_drafted",
            "tokens_per_decode_step", "num_decode_steps", "num_drafted_steps",
            # per-step draft lengths (speedbench.metrics.acceptance.per_step): K may vary from step to step
            "marginal_acceptance_rate", "draft_length_histogram", "variable_draft_length", "per_position_null_reason")


def request_acceptance(records, draft_length: int,
                       variable: str | None = None) -> tuple[RequestAcceptance | None, str | None]:
    """The metrics core's per-request acceptance table of these records, and its source.

    The same choice as the client's results (``speedbench.metrics.acceptance.from_records``): the
    engine's exact per-request statistics when every record has them, otherwise the streamed
    chunk sizes (merged chunks detected and left out) when chunks are decoding steps; ``(None,
    None)`` when neither is (chunks of an OpenAI-compatible stream without statistics): no AL.
    """
    return primary_table(records, draft_length, variable)


def declared_variable(runs: list[RunFolder]) -> str | None:
    """Why the runs' own descriptions say K varies from step to step (SGLang's speculative_adaptive, a
    draft-length schedule, draft_p_min), None when none does."""
    for run in runs:
        server = run.manifest.server if isinstance(run.manifest.server, dict) else {}
        reason = declared_variable_draft_length(server.get("server_info"), run.engine_info)
        if reason:
            return reason
    return None


def _summary(records, draft_length: int, num_resamples: int, variable: str | None = None) -> dict | None:
    table, source = request_acceptance(records, draft_length, variable)
    if table is None:
        return None
    summary = summarize_acceptance(table, num_resamples=num_resamples, seed=SEED).to_dict()
    summary["acceptance_source"] = source
    return summary


_NO_SOURCE = ("no acceptance source: the records carry no engine statistics and their chunks are not "
              "decoding steps, so no AL is shown")


def _acceptance(runs: list[RunFolder], draft_length: int) -> dict:
    source = acceptance_runs(runs)
    records = acceptance_records(source)
    summary = _summary(records, draft_length, NUM_RESAMPLES, declared_variable(source))
    if summary is None:
        out = {k: None for k in _AL_KEYS}
        out.update(acceptance_source=None, per_category={}, warnings=[_NO_SOURCE], checks_failed=[])
    else:
        out = {k: summary.get(k) for k in _AL_KEYS}
        out["acceptance_source"] = summary["acceptance_source"]
        out["per_category"] = {c: {k: v.get(k) for k in _AL_KEYS} for c, v in summary["per_category"].items()}
        out["warnings"] = summary.get("warnings", [])
        out["checks_failed"] = summary.get("checks_failed", [])
    out["runs"] = [r.path for r in source]
    out["dataset_configs"] = sorted({r.dataset_config for r in source})
    return out


def _point_figures(run: RunFolder, point: str, records, draft_length: int) -> dict:
    latency = point_latency(records, point).summary.to_dict()
    figures = {
        "run": run.path, "role": run.role, "dataset_config": run.dataset_config, "isl": run.isl_bucket,
        "point": point, "concurrency": point_concurrency(point, records), "num_requests": len(records),
        "output_tps": latency["output_tps"], "user_tps_p50": latency["user_tps"]["p50"],
        "user_tps_mean": latency["user_tps"]["mean"], "step_latency_mean": latency["step_latency"]["mean"],
        "ttft_p50": latency["ttft"]["p50"], "tpot_p50": latency["tpot"]["p50"],
        "achieved_concurrency": latency["achieved_concurrency"],
        "chunks_are_steps": all(r.chunks_are_steps for r in records),
        # requests left out of the latency figures for client lag (speedbench.metrics.client_timing)
        "client_lagged_share": latency["num_client_lagged"] / len(records) if records else None,
    }
    if run.role == "sd":
        summary = _summary(records, draft_length, 0, declared_variable([run])) or {}
        figures["acceptance_length"] = summary.get("acceptance_length")
        figures["tokens_per_decode_step"] = summary.get("tokens_per_decode_step")
        figures["draft_length_histogram"] = summary.get("draft_length_histogram")
        figures["variable_draft_length"] = summary.get("variable_draft_length")
    return figures


def _speedup(sd: dict, baseline: dict) -> dict:
    measured = None
    # Appendix G needs per-step latencies (chunks that are steps in both runs) and the tokens per decode step.
    estimate = appendix_g_estimate(baseline["step_latency_mean"], sd["step_latency_mean"],
                                   sd.get("tokens_per_decode_step"),
                                   sd["chunks_are_steps"] and baseline["chunks_are_steps"])
    if sd["output_tps"] and baseline["output_tps"]:
        measured = measured_speedup(baseline["output_tps"], sd["output_tps"]).output_tps_ratio
    return {"isl": sd["isl"], "dataset_config": sd["dataset_config"], "concurrency": sd["concurrency"],
            "point": sd["point"], "speedup_measured": measured, "speedup_estimate": estimate,
            "sd_output_tps": sd["output_tps"], "baseline_output_tps": baseline["output_tps"]}


def recompute_metrics(runs: list[RunFolder], draft_length: int) -> dict:
    """The ``metrics`` document of an entry (JSON-safe: NaN and inf become null)."""
    points = [_point_figures(run, point, records, draft_length)
              for run in runs for point, records in sorted(run.points.items())]
    baselines = {(p["dataset_config"], p["concurrency"]): p for p in points if p["role"] == "baseline"}
    speedups = [_speedup(p, baselines[(p["dataset_config"], p["concurrency"])])
                for p in points
                if p["role"] == "sd" and p["isl"] and (p["dataset_config"], p["concurrency"]) in baselines]
    return to_jsonable({
        "metrics_version": METRICS_VERSION,
        "acceptance": _acceptance(runs, draft_length),
        "points": points,
        "speedup": speedups,
        "requests": {"measured": sum(len(r.records) for r in runs), "errors": sum(r.num_errors for r in runs),
                     "warmup": sum(r.num_warmup for r in runs)},
    })


def _comparison(records_a, records_b, draft_length_a: int, draft_length_b: int) -> dict | None:
    table_a = request_acceptance(records_a, draft_length_a)[0]
    table_b = request_acceptance(records_b, draft_length_b)[0]
    if table_a is None or table_b is None:
        return None  # an entry without an acceptance source has no AL to compare
    return compare_acceptance(table_a, table_b, num_resamples=NUM_RESAMPLES, seed=SEED).to_dict()


def compare_runs(records_a, records_b, draft_length_a: int, draft_length_b: int) -> dict:
    """Paired AL difference (B - A) over the prompts both ran, overall and per category ({} when
    either side has no acceptance source)."""
    overall = _comparison(records_a, records_b, draft_length_a, draft_length_b)
    if overall is None:
        return {}
    out = {"all": overall}
    for cat in sorted({r.category for r in records_a} & {r.category for r in records_b}):
        result = _comparison([r for r in records_a if r.category == cat], [r for r in records_b if r.category == cat],
                             draft_length_a, draft_length_b)
        if result is not None:
            out[cat] = result
    return to_jsonable(out)


def finite(value) -> float | None:
    """A board cell: a finite float or None."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None
