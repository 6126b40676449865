"""Every number in the report, computed by ``speedbench.metrics`` from the runs' records.

Per load point the figures come from ``speedbench.analysis.run_results.compute_results`` (the same
routine ``speedbench run`` writes ``results.json`` with), recomputed from ``records.jsonl`` so a
stale or missing results file does not matter: acceptance from every source the engine offered
(chunks, per-request engine statistics, Prometheus counters), their agreement, latency and
throughput, all by ``speedbench.metrics``. Across runs this module pairs runs and calls the
metrics core again: measured speedup and the Appendix-G estimate (``S = t_ar * AL / t_sd`` with AL
the tokens per decode step of the primary source, since ``t_sd`` is the mean over all decode steps),
best draft length per batch size. It arranges the results into tables:

- ``points``      one row per (run, load point): throughput, achieved vs requested
                  concurrency, latency percentiles, acceptance length, max-tokens share, errors;
- ``acceptance``  one row per (run, point, category): AL with its bootstrap CI;
- ``position_rates``  per-position conditional acceptance AR_i (with CI where per-request
                  histograms exist);
- ``speedup``     per (SD run, baseline run, concurrency) on the same dataset config;
- ``best_draft_length``  per (dataset config, concurrency) when several draft lengths ran;
- ``losslessness``  per (SD run, baseline run, point): share of outputs identical token for token
                  and the first divergence per request (``speedbench.report.lossless``);
- ``phases``      thinking vs answer per (run, point, phase): AL, per-position rates and latency per
                  phase (``speedbench.report.phases`` over ``speedbench.metrics.phases``);
- ``flags``       merged chunks, source disagreement, errors, responses cut at max tokens, outputs
                  that differ from the baseline's.
"""
from __future__ import annotations

import importlib.metadata
import platform
from dataclasses import dataclass, field
from typing import Any

from speedbench import metrics as M
from speedbench.metrics.load_point import appendix_g_estimate
from speedbench.analysis.results_types import AcceptanceFigures, ClientTiming, PointFigures
from speedbench.analysis.run_results import run_results
from speedbench.records import MAX_TOKENS_REASONS, TurnRecord
from speedbench.report.category_speedup import category_speedup_rows, timed_turns, turn_ids
from speedbench.report.lossless import losslessness_rows
from speedbench.report.phases import phase_tables
from speedbench.analysis.run_folder import RunFolder
from speedbench.metrics.phases import PROMPT_STATES
from speedbench.options import option
from speedbench.settings import AnalysisOptions

LATENCY_QUANTITIES = ("ttft", "step_latency", "tpot", "e2e")
REPORT_FORMAT = "speedbench report v1"


PHASES = "thinking vs answer"  # the --help group of the phase-boundary overrides


@dataclass(kw_only=True)
class ReportOptions(AnalysisOptions):
    """``speedbench report``'s options, declared once (``speedbench.options``; --tolerance and
    --resamples come from ``AnalysisOptions``, shared with ``speedbench run``)."""

    title: str = option("--title", default="SPEED-Bench report", help="page title")
    # Thinking vs answer (speedbench.report.phases): overrides of the detected phase boundary.
    phase_boundary_ids: str | None = option(
        "--phase-boundary-ids", default=None, metavar="IDS", group=PHASES,
        help="token ids that end thinking: one id (151668, Qwen3's </think>) or a comma-separated sequence")
    phase_prompt_state: str | None = option(
        "--phase-prompt-state", default=None, choices=PROMPT_STATES, group=PHASES,
        help="the generation prompt leaves thinking to the model (none), opens it (open) or closes it (closed: "
             "every output is answer)")
    phase_tokenizer: str | None = option(
        "--phase-tokenizer", default=None, metavar="DIR", group=PHASES,
        help="tokenizer folder to detect the boundary from (default: each run's manifest)")


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
    details: dict[str, Any] = field(default_factory=dict)  # the full per-point analysis
    losslessness: list[dict[str, Any]] = field(default_factory=list)
    speedup_by_category: list[dict[str, Any]] = field(default_factory=list)  # speedbench.report.category_speedup
    phases: dict[str, Any] = field(default_factory=dict)  # speedbench.report.phases.phase_tables

    def to_dict(self) -> dict[str, Any]:
        return M.to_jsonable({
            "format": REPORT_FORMAT, "title": self.title, "options": self.options, "runs": self.runs,
            "points": self.points, "acceptance": self.acceptance, "position_rates": self.position_rates,
            "speedup": self.speedup, "best_draft_length": self.best_draft_length, "flags": self.flags,
            "provenance": self.provenance, "details": self.details, "losslessness": self.losslessness,
            "phases": self.phases, "speedup_by_category": self.speedup_by_category,
        })


@dataclass
class AnalysedPoint:
    """One load point of one run as the report analysed it: its figures, its row of the points table
    and its measured records (what the speedup tables pair)."""

    point: PointFigures
    row: dict[str, Any]
    records: list[TurnRecord]


def analyse_run(run: RunFolder, options: ReportOptions) -> list[PointFigures]:
    """The per-point analysis (the one ``speedbench run`` writes), recomputed from the run's records."""
    # K = 0 tells the analysis that a baseline run has no draft tokens to measure.
    results = run_results(run, tolerance=options.agreement_tolerance, num_resamples=options.num_resamples,
                          draft_length=run.draft_length if run.speculative else 0)
    return results.points


# --------------------------------------------------------------------------------------------
# per point
# --------------------------------------------------------------------------------------------

def _position_source(point: PointFigures) -> tuple[str | None, AcceptanceFigures | None]:
    """Where per-position rates come from: per-request histograms (chunks that are steps, or the
    engine's histograms) before run-level counters."""
    chunks = point.acceptance.get("chunks")
    if chunks and chunks.chunks_are_steps and chunks.conditional_acceptance_rate and not chunks.merged_chunks:
        return "chunks", chunks
    for name in ("engine", "counters"):
        if name in point.acceptance and point.acceptance[name].conditional_acceptance_rate:
            return name, point.acceptance[name]
    return None, None


def _draft_lengths(summary: AcceptanceFigures) -> str:
    """The acceptance table's "K per step": ``"1:172, 4:1"`` when K varied, ``"varied"`` when only the
    totals say so, ``""`` for one K (speedbench.metrics.acceptance.per_step)."""
    if summary.variable_draft_length is not True:
        return ""
    histogram = summary.draft_length_histogram or {}
    return ", ".join(f"{k}:{n}" for k, n in histogram.items()) or "varied"


def _cut_at_max_tokens(finish_reasons: dict) -> int:
    """Successful responses whose finish reason says ``max_tokens`` cut them."""
    return sum(v for k, v in finish_reasons.items() if str(k).lower() in MAX_TOKENS_REASONS)


def _flag_rows(run: RunFolder, point: PointFigures, records: list[TurnRecord]) -> list[dict]:
    name = point.run_point
    rows = []
    for text in point.flags:
        kind, _, detail = str(text).partition(":")
        rows.append({"run": run.run_id, "point": name, "flag": kind.strip(), "kind": "client analysis",
                     "count": 1, "detail": detail.strip() or text})
    for kind, count in sorted(point.errors_by_kind.items()):
        example = next((r.error for r in records if not r.ok and r.error_kind == kind), "")
        rows.append({"run": run.run_id, "point": name, "flag": "errors", "kind": str(kind), "count": count,
                     "detail": str(example)[:300]})
    finished = point.finish_reasons
    cut = _cut_at_max_tokens(finished)
    if cut:
        ok = sum(finished.values())
        rows.append({"run": run.run_id, "point": name, "flag": "cut_at_max_tokens", "kind": "finish_reason=length",
                     "count": cut, "detail": f"{cut / ok:.1%} of successful responses stopped at max_tokens"})
    return rows


def point_row(run: RunFolder, point: PointFigures, records: list[TurnRecord]) -> dict[str, Any]:
    latency = point.timing
    ok = sum(point.finish_reasons.values())
    row: dict[str, Any] = {
        "run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "isl_bucket": run.isl_bucket,
        "speculative": run.speculative, "draft_length": (point.draft_length or run.draft_length or 0)
        if run.speculative else 0,
        "point": point.run_point, "load_shape": point.load_shape,
        "requested_concurrency": point.requested_concurrency, "request_rate": point.request_rate,
        "num_requests": point.num_requests, "num_errors": point.num_errors,
        "mean_prompt_tokens": (sum(r.prompt_tokens for r in records) / len(records)) if records else None,
        "output_tps": latency.output_tps, "user_tps_mean": latency.spread("user_tps").mean,
        "user_tps_p50": latency.spread("user_tps").p50,
        "achieved_concurrency": point.achieved_concurrency, "run_span_s": latency.run_span,
        "total_output_tokens": latency.total_output_tokens,
        "max_tokens_share": _cut_at_max_tokens(point.finish_reasons) / ok if ok else None,
        **_client_timing_cells(point.client_timing),
    }
    for quantity in LATENCY_QUANTITIES:
        stats = latency.spread(quantity)
        for stat in ("mean", "p50", "p90", "p99"):
            row[f"{quantity}_{stat}_s"] = getattr(stats, stat)
    summary = point.primary if run.speculative else None
    if summary and summary.acceptance_length is not None:
        low, high = summary.ci
        row.update({"acceptance_source": point.primary_acceptance_source, "acceptance_length": summary.acceptance_length,
                    "acceptance_length_ci_low": low, "acceptance_length_ci_high": high,
                    "acceptance_length_request_weighted": summary.acceptance_length_request_weighted,
                    "mean_acceptance_rate": summary.mean_acceptance_rate,
                    "acceptance_length_drafted": summary.acceptance_length_drafted,
                    "tokens_per_decode_step": summary.tokens_per_decode_step})
        for other, other_summary in point.acceptance.items():
            if other_summary.acceptance_length is not None:
                row[f"acceptance_length_{other}"] = other_summary.acceptance_length
    return row


def _client_timing_cells(timing: ClientTiming) -> dict[str, Any]:
    """The point's client timing health (``speedbench.metrics.client_timing``): the share of requests
    left out of the decode-time figures, chunks that shared a read, the event loop's lag (seconds)."""
    lag = timing.loop_lag_ms or {}
    return {"client_lagged_share": timing.client_lagged_share,
            "chunks_sharing_a_read_share": timing.chunks_sharing_a_read_share,
            **{f"loop_lag_{stat}_s": lag[stat] / 1e3 if lag.get(stat) is not None else None
               for stat in ("p50", "p99", "max")}}


def _acceptance_rows(run: RunFolder, point: PointFigures) -> tuple[list[dict], list[dict]]:
    if not run.speculative:
        return [], []
    name = point.run_point
    source = point.primary_acceptance_source
    summary = point.primary
    rows, positions = [], []
    if summary and summary.acceptance_length is not None:
        entries = [("all", summary)] + sorted(summary.per_category.items())
        for category, s in entries:
            low, high = s.ci
            rows.append({"run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "point": name,
                         "category": category, "source": source, "num_requests": s.num_requests,
                         "num_steps": s.num_steps, "acceptance_length": s.acceptance_length,
                         "acceptance_length_ci_low": low, "acceptance_length_ci_high": high,
                         "acceptance_length_request_weighted": s.acceptance_length_request_weighted,
                         "mean_acceptance_rate": s.mean_acceptance_rate, "draft_length": s.draft_length,
                         "draft_lengths": _draft_lengths(s)})
    position_source, position_summary = _position_source(point)
    if position_summary:
        entries = [("all", position_summary)] + sorted(position_summary.per_category.items())
        for category, s in entries:
            rates = s.conditional_acceptance_rate or []
            rate_cis = s.conditional_acceptance_rate_ci or [None] * len(rates)
            marginals = s.marginal_acceptance_rate or [None] * len(rates)
            for position, (rate, rci, marginal) in enumerate(zip(rates, rate_cis, marginals), start=1):
                positions.append({"run": run.run_id, "label": run.label, "dataset_config": run.dataset_config,
                                  "point": name, "category": category,
                                  "source": position_source, "position": position, "conditional_acceptance_rate": rate,
                                  "ci_low": rci[0] if rci else None, "ci_high": rci[1] if rci else None,
                                  "marginal_acceptance_rate": marginal})
    return rows, positions


# --------------------------------------------------------------------------------------------
# across runs
# --------------------------------------------------------------------------------------------

def _e2e_by_turn(records: list[TurnRecord]) -> tuple[list[float], list[str]]:
    done = timed_turns(records)
    return [r.e2e_s for r in done], turn_ids(done)


def _speedup_rows(runs: list[RunFolder], analysed: dict[tuple[str, str], AnalysedPoint]) -> list[dict]:
    rows = []
    for sd in (r for r in runs if r.speculative):
        for base in (b for b in runs if not b.speculative and b.dataset_config == sd.dataset_config):
            base_points = {a.point.requested_concurrency: a for (rid, _), a in analysed.items()
                           if rid == base.run_id and a.point.requested_concurrency is not None}
            for (rid, _), sd_entry in analysed.items():
                concurrency = sd_entry.point.requested_concurrency
                if rid != sd.run_id or concurrency not in base_points:
                    continue
                a, b = base_points[concurrency].row, sd_entry.row
                if not (a.get("output_tps") and b.get("output_tps")):
                    continue
                lat_a, ids_a = _e2e_by_turn(base_points[concurrency].records)
                lat_b, ids_b = _e2e_by_turn(sd_entry.records)
                measured = M.measured_speedup(a["output_tps"], b["output_tps"], latencies_ar=lat_a, latencies_sd=lat_b,
                                              question_ids_ar=ids_a, question_ids_sd=ids_b)
                row = {"dataset_config": sd.dataset_config, "isl_bucket": sd.isl_bucket, "concurrency": concurrency,
                       "sd_run": sd.run_id, "sd_label": sd.label, "baseline_run": base.run_id,
                       "draft_length": b["draft_length"], "output_tps_baseline": a["output_tps"],
                       "output_tps_sd": b["output_tps"], "measured_speedup": measured.output_tps_ratio,
                       "latency_ratio": measured.latency_ratio, "num_paired_requests": measured.num_paired_requests,
                       "t_ar_s": a.get("step_latency_mean_s"), "t_sd_s": b.get("step_latency_mean_s"),
                       "acceptance_length": b.get("acceptance_length"),
                       "tokens_per_decode_step": b.get("tokens_per_decode_step"), "estimated_speedup": None,
                       "estimate_error": None}
                # Appendix G needs per-step latencies (chunks that are verification steps) and the
                # tokens per decode step (t_sd is the mean over all decode steps).
                steps_ok = all(r.chunks_are_steps for r in sd_entry.records + base_points[concurrency].records
                               if r.ok)
                estimate = appendix_g_estimate(row["t_ar_s"], row["t_sd_s"], row["tokens_per_decode_step"], steps_ok)
                if estimate is not None:
                    row["estimated_speedup"] = estimate
                    row["estimate_error"] = M.relative_error(estimate, measured.output_tps_ratio)
                rows.append(row)
    return sorted(rows, key=lambda r: (r["dataset_config"], r["sd_run"], r["concurrency"]))


def _best_draft_rows(runs: list[RunFolder], analysed: dict) -> list[dict]:
    rows = []
    for config in sorted({r.dataset_config for r in runs}):
        members = {r.run_id for r in runs if r.dataset_config == config}
        entries = [a.row for (rid, _), a in analysed.items() if rid in members
                   and a.row.get("output_tps") and a.row.get("requested_concurrency")]
        if len({e["draft_length"] for e in entries if e["draft_length"] > 0}) < 2:
            continue  # fewer than two draft lengths: nothing to choose
        conc = [e["requested_concurrency"] for e in entries]
        ks = [e["draft_length"] for e in entries]
        tps = [e["output_tps"] for e in entries]
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


def _run_summary(run: RunFolder, full: bool = True) -> dict[str, Any]:
    m = run.manifest
    engine = run.engine_info or {}
    models = engine.get("models") or {}
    summary = {
        "run": run.run_id, "label": run.label, "path": str(run.path), "speculative": run.speculative,
        "speculation": run.speculation, "draft_length": run.draft_length, "dataset_config": run.dataset_config,
        "isl_bucket": run.isl_bucket, "engine": m.engine, "engine_version": m.engine_version,
        "model_id": m.model_id, "url": m.url,
        "target_model": models.get("target"), "draft_model": models.get("draft"),
        "dataset_dir": m.dataset_dir, "dataset_config_sha256": m.dataset_config_sha256,
        "dataset_manifest_sha256": m.dataset_manifest_sha256,
        "num_rows": m.num_rows, "tokenizer_sha256": m.tokenizer_sha256, "prompt_mode": m.prompt_mode,
        "client_version": m.client_version, "records_sha256": run.records_sha256,
        "num_records": len(run.all_records), "num_measured_records": len(run.measured), "notes": run.notes,
    }
    if full:
        summary.update({"options": m.options, "server": m.server, "engine_info": engine or None})
    return summary


def _partial_config_rows(run: RunFolder) -> list[dict]:
    """A flag when the run took a subset of its config (``--limit``, ``--categories``, ``--per-category``)."""
    selection = (run.manifest.options or {}).get("selection") or {}
    if not selection.get("partial"):
        return []
    taken = ", ".join(f"{c} {n}" for c, n in selection["rows_per_category"].items() if n)
    return [{"run": run.run_id, "point": "", "flag": "partial_config", "kind": "subset", "count": selection["rows"],
             "detail": f"{selection['rows']} of the config's {selection['config_rows']} rows ({taken})"}]


def compute_report(runs: list[RunFolder], options: ReportOptions | None = None) -> ReportData:
    options = options or ReportOptions()
    analysed: dict[tuple[str, str], AnalysedPoint] = {}
    points, acceptance, positions, flags = [], [], [], []
    details: dict[str, Any] = {}
    for run in runs:
        flags += _partial_config_rows(run)
        records_by_point = run.measured_points
        for point in analyse_run(run, options):
            name = point.run_point
            records = records_by_point.get(name, [])
            row = point_row(run, point, records)
            analysed[(run.run_id, name)] = AnalysedPoint(point, row, records)
            points.append(row)
            flags += _flag_rows(run, point, records)
            rows, pos = _acceptance_rows(run, point)
            acceptance += rows
            positions += pos
            details[f"{run.run_id}/{name}"] = point.to_dict()
    losslessness, lossless_flags = losslessness_rows(runs)
    speedup = _speedup_rows(runs, analysed)
    provenance = {"generator": "speedbench report", "report_format": REPORT_FORMAT, "versions": _versions(),
                  "runs": [_run_summary(run) for run in runs]}
    return ReportData(
        title=options.title, runs=[_run_summary(run, full=False) for run in runs],
        points=points, acceptance=acceptance, position_rates=positions,
        speedup=speedup, speedup_by_category=category_speedup_rows(speedup, analysed, options.num_resamples),
        best_draft_length=_best_draft_rows(runs, analysed),
        flags=flags + lossless_flags, provenance=provenance, losslessness=losslessness,
        phases=phase_tables(runs, boundary_ids=options.phase_boundary_ids, prompt_state=options.phase_prompt_state,
                            tokenizer=options.phase_tokenizer, num_resamples=options.num_resamples),
        options={"num_resamples": options.num_resamples, "confidence": M.bootstrap.DEFAULT_CONFIDENCE,
                 "seed": M.bootstrap.DEFAULT_SEED,
                 "source_disagreement_tolerance": options.agreement_tolerance},
        details=details,
    )
