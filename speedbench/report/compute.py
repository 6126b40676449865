"""Every number in the report, computed by ``speedbench.metrics`` from the runs' records.

Nothing here does metric math of its own: records are turned into the metrics core's inputs
(send times, chunk times and sizes, engine counts), the core computes, and this module
arranges the results into tables:

- ``points``      one row per (run, load point): throughput, achieved vs requested
                  concurrency, latency percentiles, acceptance length, max-tokens share, errors;
- ``acceptance``  one row per (run, point, category): AL with its bootstrap CI and the
                  per-position conditional acceptance rates;
- ``speedup``     one row per (SD run, baseline run, concurrency) on the same dataset config:
                  measured speedup beside the Appendix-G estimate ``S = t_ar * AL / t_sd``;
- ``best_draft_length``  per (dataset config, concurrency) when several draft lengths ran;
- ``flags``       merged chunks, acceptance-source disagreement, errors, failed identity checks.
"""
from __future__ import annotations

import importlib.metadata
import platform
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speedbench import metrics as M
from speedbench.records import TurnRecord
from speedbench.report.runs import LoadedRun

# Relative difference in step-weighted AL above which two acceptance sources are flagged.
SOURCE_DISAGREEMENT_TOLERANCE = 0.01
LATENCY_QUANTITIES = ("ttft", "step_latency", "tpot", "e2e")
REPORT_FORMAT = "speedbench report v1"


@dataclass
class ReportOptions:
    num_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    title: str = "SPEED-Bench report"


@dataclass
class ReportData:
    """The report's content: plain JSON-safe tables plus provenance."""

    title: str
    runs: list[dict[str, Any]]
    points: list[dict[str, Any]]
    acceptance: list[dict[str, Any]]
    position_rates: list[dict[str, Any]]
    speedup: list[dict[str, Any]]
    best_draft_length: list[dict[str, Any]]
    flags: list[dict[str, Any]]
    provenance: dict[str, Any]
    options: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict)  # full metric summaries per (run, point)

    def to_dict(self) -> dict[str, Any]:
        return M.to_jsonable({
            "format": REPORT_FORMAT,
            "title": self.title,
            "options": self.options,
            "runs": self.runs,
            "points": self.points,
            "acceptance": self.acceptance,
            "position_rates": self.position_rates,
            "speedup": self.speedup,
            "best_draft_length": self.best_draft_length,
            "flags": self.flags,
            "provenance": self.provenance,
            "details": self.details,
        })


# --------------------------------------------------------------------------------------------
# records -> metrics core inputs
# --------------------------------------------------------------------------------------------

def request_timings(records: list[TurnRecord]) -> M.RequestTimings:
    """Scheduled send time and chunk receive times in seconds from the earliest send of the set.

    Integer nanoseconds are shifted before the float conversion so that no precision is lost.
    """
    origin = min(r.scheduled_ns for r in records)
    return M.timings_from_lists(
        [(r.scheduled_ns - origin) / 1e9 for r in records],
        [[(t - origin) / 1e9 for t in r.chunk_ns] for r in records],
        [list(r.chunk_tokens) for r in records],
    )


def _engine_steps(stats) -> int | None:
    for name in ("steps", "verify_steps"):
        value = getattr(stats, name, None)
        if value is not None:
            return int(value)
    return None


def acceptance_tables(records: list[TurnRecord], draft_length: int | None) -> dict[str, M.RequestAcceptance]:
    """The per-request acceptance table from every source the records carry.

    ``chunks``: streamed chunk sizes, when the client could make each chunk one verification
    step (``chunks_are_steps``): gives the histogram and so the per-position rates.
    ``engine``: the engine's own per-request report: a histogram when it sends one, else
    (steps, accepted, drafted) counts.
    """
    tables: dict[str, M.RequestAcceptance] = {}
    common = dict(categories=[r.category for r in records], question_ids=[r.question_id for r in records],
                  finish_reasons=[r.finish_reason for r in records])
    if records and all(r.chunks_are_steps for r in records) and draft_length:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", M.AcceptanceWarning)  # merged chunks are reported as flags
            tables["chunks"] = M.requests_from_step_sizes([list(r.chunk_tokens) for r in records],
                                                          draft_length=draft_length, **common)
    stats = [r.engine_stats for r in records]
    if records and all(s is not None for s in stats):
        if all(s.acceptance_histogram for s in stats):
            tables["engine"] = M.requests_from_histograms([s.acceptance_histogram for s in stats], **common)
        else:
            steps = [_engine_steps(s) for s in stats]
            if all(v is not None for v in steps) and all(s.accepted_tokens is not None for s in stats):
                drafted = [s.draft_tokens for s in stats]
                tables["engine"] = M.requests_from_counts(
                    steps, [s.accepted_tokens for s in stats],
                    drafted if all(d is not None for d in drafted) else None,
                    draft_length=draft_length if any(d is None for d in drafted) else None, **common)
    return tables


def _primary_source(tables: dict[str, M.RequestAcceptance]) -> str | None:
    """Prefer a source with per-position information; chunks before the engine's counts."""
    with_hist = [name for name in ("chunks", "engine") if name in tables and tables[name].histograms is not None]
    if with_hist:
        return with_hist[0]
    return next((name for name in ("engine", "chunks") if name in tables), None)


# --------------------------------------------------------------------------------------------
# per point
# --------------------------------------------------------------------------------------------

def _point_flags(run: LoadedRun, point: str, records: list[TurnRecord], summaries: dict[str, M.AcceptanceSummary]) -> list[dict]:
    flags = []
    errors = Counter(r.error_kind or "error" for r in records if not r.ok)
    for kind, count in sorted(errors.items()):
        example = next(r.error for r in records if not r.ok and (r.error_kind or "error") == kind)
        flags.append({"run": run.run_id, "point": point, "flag": "errors", "kind": kind, "count": count,
                      "detail": str(example)[:300]})
    for source, summary in summaries.items():
        report = summary.trim_report or {}
        if report.get("num_merged_chunks"):
            flags.append({"run": run.run_id, "point": point, "flag": "merged_chunks", "kind": source,
                          "count": report["num_merged_chunks"],
                          "detail": f"{report['num_merged_chunks']} chunk(s) larger than K+1 "
                                    f"(share {report.get('merged_chunk_share', 0):.3%}); excluded from the histogram"})
        for problem in summary.checks_failed:
            flags.append({"run": run.run_id, "point": point, "flag": "identity_check", "kind": source,
                          "count": 1, "detail": problem})
    return flags


def _source_agreement(run: LoadedRun, point: str, records: list[TurnRecord], tables: dict) -> tuple[dict, list[dict]]:
    """Chunk-based and engine-reported AL on the same requests, compared within
    ``SOURCE_DISAGREEMENT_TOLERANCE``. The last chunk is kept as a step (the engine counts it);
    the lone prefill token is dropped (engines count verification steps after the prefill)."""
    if not ("chunks" in tables and "engine" in tables and run.draft_length):
        return {}, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.AcceptanceWarning)
        untrimmed = M.requests_from_step_sizes(
            [list(r.chunk_tokens) for r in records], draft_length=run.draft_length,
            categories=[r.category for r in records], question_ids=[r.question_id for r in records],
            rules=M.TrimRules(first_chunk="drop_if_lone", last_chunk="keep"))
    al_chunks = float(M.acceptance_length_from_counts(untrimmed.steps.sum(), untrimmed.accepted.sum()))
    engine = tables["engine"]
    al_engine = float(M.acceptance_length_from_counts(engine.steps.sum(), engine.accepted.sum()))
    relative = abs(al_chunks - al_engine) / al_engine if al_engine else float("nan")
    comparison = {"acceptance_length_chunks_all_steps": al_chunks, "acceptance_length_engine": al_engine,
                  "relative_difference": relative}
    flags = []
    if not relative <= SOURCE_DISAGREEMENT_TOLERANCE:
        flags.append({"run": run.run_id, "point": point, "flag": "source_disagreement", "kind": "chunks vs engine",
                      "count": 1, "detail": f"AL from chunks {al_chunks:.4f} vs engine {al_engine:.4f} "
                                            f"(relative difference {relative:.2%} > {SOURCE_DISAGREEMENT_TOLERANCE:.0%})"})
    return comparison, flags


def _results_flags(run: LoadedRun) -> list[dict]:
    """Flags the client itself raised in results.json (kept verbatim, marked as such)."""
    flags = []
    results = run.results or {}
    for point_name, point in (results.get("points") or {}).items() if isinstance(results.get("points"), dict) else []:
        for flag in point.get("flags", []) if isinstance(point, dict) else []:
            flags.append({"run": run.run_id, "point": point_name, "flag": "client", "kind": str(flag.get("kind", "flag"))
                          if isinstance(flag, dict) else "flag", "count": 1,
                          "detail": str(flag.get("message", flag) if isinstance(flag, dict) else flag)[:300]})
    return flags


def point_figures(run: LoadedRun, point: str, records: list[TurnRecord], options: ReportOptions) -> dict[str, Any]:
    ok = [r for r in records if r.ok]
    streamed = [r for r in ok if r.chunk_ns]
    first = records[0]
    row: dict[str, Any] = {
        "run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "isl_bucket": run.isl_bucket,
        "speculative": run.speculative, "draft_length": run.draft_length or 0, "point": point,
        "load_shape": first.load_shape, "requested_concurrency": first.requested_concurrency,
        "request_rate": first.request_rate, "num_requests": len(records), "num_errors": len(records) - len(ok),
        "mean_prompt_tokens": float(np.mean([r.prompt_tokens for r in records])),
    }
    detail: dict[str, Any] = {}
    if streamed:
        latency = M.summarize_latency(request_timings(streamed), requested_concurrency=first.requested_concurrency)
        detail["latency"] = latency.to_dict()
        row.update({
            "output_tps": latency.output_tps, "user_tps_mean": latency.user_tps.mean, "user_tps_p50": latency.user_tps.p50,
            "achieved_concurrency": latency.achieved_concurrency, "run_span_s": latency.run_span,
            "total_output_tokens": latency.total_output_tokens,
        })
        for quantity in LATENCY_QUANTITIES:
            stats = getattr(latency, quantity)
            for stat in ("mean", "p50", "p90", "p99"):
                row[f"{quantity}_{stat}_s"] = getattr(stats, stat)
    max_tokens = sum(1 for r in ok if (r.finish_reason or "").lower() in ("length", "max_tokens"))
    row["max_tokens_share"] = max_tokens / len(ok) if ok else None
    summaries: dict[str, M.AcceptanceSummary] = {}
    flags: list[dict] = []
    if run.speculative and ok:
        tables = acceptance_tables(ok, run.draft_length)
        for name, table in tables.items():
            summaries[name] = M.summarize_acceptance(table, num_resamples=options.num_resamples,
                                                     confidence=options.confidence, seed=options.seed)
        primary = _primary_source(tables)
        comparison, disagreement = _source_agreement(run, point, ok, tables)
        flags += disagreement
        detail["acceptance"] = {name: s.to_dict() for name, s in summaries.items()}
        detail["acceptance_sources_compared"] = comparison
        if primary:
            s = summaries[primary]
            row.update({"acceptance_source": primary, "acceptance_length": s.acceptance_length,
                        "acceptance_length_ci_low": (s.acceptance_length_ci or [None, None])[0],
                        "acceptance_length_ci_high": (s.acceptance_length_ci or [None, None])[1],
                        "acceptance_length_request_weighted": s.acceptance_length_request_weighted,
                        "mean_acceptance_rate": s.mean_acceptance_rate})
            for other, summary in summaries.items():
                row[f"acceptance_length_{other}"] = summary.acceptance_length
    flags += _point_flags(run, point, records, summaries)
    if row["max_tokens_share"]:
        flags.append({"run": run.run_id, "point": point, "flag": "cut_at_max_tokens", "kind": "finish_reason=length",
                      "count": max_tokens, "detail": f"{row['max_tokens_share']:.1%} of successful responses stopped at max_tokens"})
    if run.speculative and streamed:
        # step latency of the SD run per verification step, for Appendix G (chunks are steps)
        gaps, _ = M.step_latencies(request_timings(streamed))
        detail["step_latency_samples"] = gaps
    elif streamed:
        gaps, _ = M.step_latencies(request_timings(streamed))
        detail["step_latency_samples"] = gaps
    return {"row": row, "summaries": summaries, "flags": flags, "detail": detail, "records": ok}


# --------------------------------------------------------------------------------------------
# across runs
# --------------------------------------------------------------------------------------------

def _acceptance_rows(run: LoadedRun, point: str, summary: M.AcceptanceSummary, source: str) -> tuple[list[dict], list[dict]]:
    rows, positions = [], []
    entries = [("all", summary.to_dict())] + sorted(summary.per_category.items())
    for category, s in entries:
        ci = s.get("acceptance_length_ci") or [None, None]
        rows.append({"run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "point": point,
                     "category": category, "source": source, "num_requests": s["num_requests"],
                     "num_steps": s["num_steps"], "acceptance_length": s["acceptance_length"],
                     "acceptance_length_ci_low": ci[0], "acceptance_length_ci_high": ci[1],
                     "acceptance_length_request_weighted": s.get("acceptance_length_request_weighted"),
                     "mean_acceptance_rate": s.get("mean_acceptance_rate"), "draft_length": s.get("draft_length")})
        rates = s.get("conditional_acceptance_rate")
        if rates:
            rate_cis = s.get("conditional_acceptance_rate_ci") or [[None, None]] * len(rates)
            for position, (rate, rci) in enumerate(zip(rates, rate_cis), start=1):
                positions.append({"run": run.run_id, "label": run.label, "point": point, "category": category,
                                  "position": position, "conditional_acceptance_rate": rate,
                                  "ci_low": rci[0] if rci else None, "ci_high": rci[1] if rci else None,
                                  "marginal_acceptance_rate": (s.get("marginal_acceptance_rate") or [None] * len(rates))[position - 1]})
    return rows, positions


def _speedup_rows(runs: list[LoadedRun], computed: dict[tuple[str, str], dict]) -> list[dict]:
    rows = []
    baselines = [r for r in runs if not r.speculative]
    for sd in (r for r in runs if r.speculative):
        for base in (b for b in baselines if b.dataset_config == sd.dataset_config):
            base_points = {c["row"]["requested_concurrency"]: c for (rid, _), c in computed.items() if rid == base.run_id}
            for (rid, point), sd_point in computed.items():
                if rid != sd.run_id:
                    continue
                concurrency = sd_point["row"]["requested_concurrency"]
                base_point = base_points.get(concurrency)
                if base_point is None or concurrency is None:
                    continue
                a, b = base_point["row"], sd_point["row"]
                if not (a.get("output_tps") and b.get("output_tps")):
                    continue
                lat_a = [r.e2e_s for r in base_point["records"] if r.chunk_ns]
                lat_b = [r.e2e_s for r in sd_point["records"] if r.chunk_ns]
                ids_a = [f"{r.question_id}/{r.turn_index}" for r in base_point["records"] if r.chunk_ns]
                ids_b = [f"{r.question_id}/{r.turn_index}" for r in sd_point["records"] if r.chunk_ns]
                measured = M.measured_speedup(a["output_tps"], b["output_tps"], latencies_ar=lat_a, latencies_sd=lat_b,
                                              question_ids_ar=ids_a, question_ids_sd=ids_b)
                row = {"dataset_config": sd.dataset_config, "isl_bucket": sd.isl_bucket, "concurrency": concurrency,
                       "sd_run": sd.run_id, "sd_label": sd.label, "baseline_run": base.run_id,
                       "draft_length": sd.draft_length, "output_tps_baseline": a["output_tps"],
                       "output_tps_sd": b["output_tps"], "measured_speedup": measured.output_tps_ratio,
                       "latency_ratio": measured.latency_ratio, "num_paired_requests": measured.num_paired_requests}
                t_ar = base_point["detail"].get("step_latency_samples")
                t_sd = sd_point["detail"].get("step_latency_samples")
                al = b.get("acceptance_length")
                if t_ar is not None and t_sd is not None and len(t_ar) and len(t_sd) and al and al >= 1 \
                        and sd_point["summaries"] and sd_point["records"][0].chunks_are_steps:
                    estimate = M.estimate_speedup(np.asarray(t_ar)[np.asarray(t_ar) > 0],
                                                  np.asarray(t_sd)[np.asarray(t_sd) > 0], al,
                                                  measured_speedup=measured.output_tps_ratio)
                    row.update({"t_ar_s": estimate.t_ar, "t_sd_s": estimate.t_sd, "acceptance_length": al,
                                "estimated_speedup": estimate.speedup_estimate, "estimate_error": estimate.estimate_error})
                else:
                    row.update({"t_ar_s": None, "t_sd_s": None, "acceptance_length": al, "estimated_speedup": None,
                                "estimate_error": None})
                rows.append(row)
    return sorted(rows, key=lambda r: (r["dataset_config"], r["sd_run"], r["concurrency"]))


def _best_draft_rows(runs: list[LoadedRun], computed: dict) -> list[dict]:
    rows = []
    for config in sorted({r.dataset_config for r in runs}):
        members = [r for r in runs if r.dataset_config == config]
        lengths = {(r.draft_length or 0) if r.speculative else 0 for r in members}
        if len({k for k in lengths if k > 0}) < 2:
            continue  # one draft length: nothing to choose
        conc, ks, tps = [], [], []
        for run in members:
            for (rid, _), c in computed.items():
                if rid == run.run_id and c["row"].get("output_tps") and c["row"]["requested_concurrency"]:
                    conc.append(c["row"]["requested_concurrency"])
                    ks.append((run.draft_length or 0) if run.speculative else 0)
                    tps.append(c["row"]["output_tps"])
        choice = M.best_draft_length(conc, ks, tps, metric="output_tps")
        for level, best in choice.best_draft_length.items():
            candidates = {str(k): v for c, k, v in zip(conc, ks, tps) if str(c) == level}
            rows.append({"dataset_config": config, "concurrency": int(level), "best_draft_length": best,
                         "best_output_tps": choice.best_value[level], "candidates_output_tps": candidates})
    return rows


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in ("speed-bench", "numpy", "matplotlib", "xllamacpp", "jinja2"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def _run_summary(run: LoadedRun) -> dict[str, Any]:
    m = run.manifest
    engine = run.engine_info or {}
    models = engine.get("models") or {}
    return {
        "run": run.run_id, "label": run.label, "path": str(run.path), "speculative": run.speculative,
        "speculation": run.speculation, "draft_length": run.draft_length, "dataset_config": run.dataset_config,
        "isl_bucket": run.isl_bucket, "engine": m.get("engine"), "engine_version": m.get("engine_version"),
        "model_id": m.get("model_id"), "url": m.get("url"),
        "target_model": models.get("target"), "draft_model": models.get("draft"),
        "dataset_dir": m.get("dataset_dir"), "dataset_manifest_sha256": m.get("dataset_manifest_sha256"),
        "num_rows": m.get("num_rows"), "tokenizer_sha256": m.get("tokenizer_sha256"), "prompt_mode": m.get("prompt_mode"),
        "client_version": m.get("client_version"), "records_sha256": run.records_sha256,
        "num_records": len(run.records), "num_measured_records": len(run.measured_records()),
        "options": m.get("options"), "server": m.get("server"), "engine_info": engine or None, "notes": run.notes,
    }


def compute_report(runs: list[LoadedRun], options: ReportOptions | None = None) -> ReportData:
    options = options or ReportOptions()
    computed: dict[tuple[str, str], dict] = {}
    points, acceptance, positions, flags = [], [], [], []
    details: dict[str, Any] = {}
    for run in runs:
        flags += _results_flags(run)
        for point, records in run.points():
            figures = point_figures(run, point, records, options)
            computed[(run.run_id, point)] = figures
            points.append(figures["row"])
            flags += figures["flags"]
            detail = dict(figures["detail"])
            detail.pop("step_latency_samples", None)
            details[f"{run.run_id}/{point}"] = detail
            source = figures["row"].get("acceptance_source")
            if source:
                rows, pos = _acceptance_rows(run, point, figures["summaries"][source], source)
                acceptance += rows
                positions += pos
    provenance = {
        "generator": "speedbench report",
        "report_format": REPORT_FORMAT,
        "versions": _versions(),
        "runs": [_run_summary(run) for run in runs],
    }
    return ReportData(
        title=options.title,
        runs=[{k: v for k, v in _run_summary(run).items() if k not in ("options", "server", "engine_info")} for run in runs],
        points=points, acceptance=acceptance, position_rates=positions,
        speedup=_speedup_rows(runs, computed), best_draft_length=_best_draft_rows(runs, computed),
        flags=flags, provenance=provenance,
        options={"num_resamples": options.num_resamples, "confidence": options.confidence, "seed": options.seed,
                 "source_disagreement_tolerance": SOURCE_DISAGREEMENT_TOLERANCE},
        details=details,
    )
