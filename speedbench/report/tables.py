"""The report's tables: which columns, in which order, with which headers and number formats.

HTML, Markdown and CSV all render from these definitions, so the three show the same numbers
(HTML and Markdown rounded the same way; CSV and JSON at full precision).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from speedbench.report.compute import ReportData
from speedbench.report.coverage_table import coverage_rows
from speedbench.report.peer_table import peer_rows


def format_value(value: Any, kind: str = "num") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not math.isfinite(value):
        return "-"
    if kind == "ms":
        return f"{value * 1e3:.2f}"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "x":
        return f"{value:.3f}x"
    if kind == "int":
        return f"{int(value)}"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:.1f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return str(value)


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    kind: str = "num"
    value: Callable[[dict], Any] | None = None

    def get(self, row: dict) -> Any:
        return self.value(row) if self.value else row.get(self.key)


def _ci(row: dict, low: str = "acceptance_length_ci_low", high: str = "acceptance_length_ci_high") -> str:
    if row.get(low) is None or row.get(high) is None:
        return "-"
    return f"[{format_value(row[low])}, {format_value(row[high])}]"


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: tuple[Column, ...]
    rows: Callable[[ReportData], list[dict]]
    note: str = ""

    def cells(self, data: ReportData) -> list[list[str]]:
        return [[format_value(c.get(row), c.kind) for c in self.columns] for row in self.rows(data)]


def _latency_columns() -> tuple[Column, ...]:
    cols = []
    for key, name in (("ttft", "TTFT"), ("step_latency", "step"), ("tpot", "TPOT"), ("e2e", "E2E")):
        for stat in ("p50", "p90", "p99", "mean"):
            cols.append(Column(f"{key}_{stat}_s", f"{name} {stat} (ms)", "ms"))
    return tuple(cols)


TABLES: tuple[Table, ...] = (
    Table("runs", "Runs", (
        Column("run", "run"), Column("label", "label"), Column("dataset_config", "dataset config"),
        Column("speculation", "speculation"), Column("draft_length", "K", "int"), Column("engine", "engine"),
        Column("engine_version", "engine version"), Column("model_id", "model"),
        Column("num_measured_records", "records", "int")), lambda d: d.runs),
    Table("acceptance", "Acceptance length per category", (
        Column("label", "run"), Column("dataset_config", "config"), Column("point", "point"),
        Column("category", "category"), Column("num_requests", "requests", "int"), Column("num_steps", "steps", "int"),
        Column("acceptance_length", "AL (step-weighted)"), Column("ci", "95% CI", value=_ci),
        Column("acceptance_length_request_weighted", "AL (request-weighted)"),
        Column("mean_acceptance_rate", "accepted / drafted"), Column("draft_lengths", "K per step", "str"),
        Column("source", "source")), lambda d: d.acceptance,
        "Step-weighted AL pools all verification steps (1 + accepted / steps); request-weighted AL is the "
        "mean of per-request ALs (what the published reference reports). K per step: steps by the tokens "
        "they drafted (K:steps) when the draft length varied; 'varied' when only the totals say so."),
    Table("position_rates", "Per-position conditional acceptance (all categories)", (
        Column("label", "run"), Column("dataset_config", "config"), Column("point", "point"),
        Column("position", "position", "int"), Column("conditional_acceptance_rate", "AR_i"),
        Column("ci", "95% CI", value=lambda r: _ci(r, "ci_low", "ci_high")),
        Column("marginal_acceptance_rate", "P(>= i)")),
        lambda d: [r for r in d.position_rates if r["category"] == "all"],
        "AR_i counts position i over the steps that drafted it and accepted every position before it (with "
        "one K for every step: P(>= i) / P(>= i-1)); where the draft length varied and no per-step counts "
        "say which step drafted which position, no source gives rates and the point has no rows here."),
    Table("points", "Throughput and concurrency per load point", (
        Column("label", "run"), Column("dataset_config", "config"), Column("point", "point"),
        Column("requested_concurrency", "requested c", "int"), Column("achieved_concurrency", "achieved c"),
        Column("num_requests", "requests", "int"), Column("num_errors", "errors", "int"),
        Column("mean_prompt_tokens", "mean ISL (tokens)"),
        Column("output_tps", "output TPS"), Column("user_tps_mean", "user TPS (mean)"),
        Column("user_tps_p50", "user TPS (p50)"), Column("acceptance_length", "AL"),
        Column("max_tokens_share", "cut at max tokens", "pct"),
        Column("client_lagged_share", "client-lagged", "pct"),
        Column("chunks_sharing_a_read_share", "chunks sharing a read", "pct"),
        Column("loop_lag_p99_s", "client loop lag p99 (ms)", "ms")), lambda d: d.points,
        "Client-lagged requests reached the client with their decode in one read or a burst faster than any "
        "engine decodes (a busy client or server frontend): they are left "
        "out of the step latency, TPOT and per-user speed figures. Chunks sharing a read: chunks stamped with "
        "the previous chunk's read (step times blurred). Loop lag: the client's event loop, per request the "
        "largest lateness while it was in flight."),
    Table("speedup", "Speedup per concurrency: measured and Appendix-G estimate", (
        Column("dataset_config", "config"), Column("sd_label", "SD run"), Column("concurrency", "c", "int"),
        Column("output_tps_baseline", "baseline TPS"), Column("output_tps_sd", "SD TPS"),
        Column("measured_speedup", "measured", "x"), Column("latency_ratio", "E2E latency ratio", "x"),
        Column("t_ar_s", "t_ar (ms)", "ms"), Column("t_sd_s", "t_sd (ms)", "ms"), Column("acceptance_length", "AL"),
        Column("estimated_speedup", "Appendix-G estimate", "x"), Column("estimate_error", "estimate error", "pct")),
        lambda d: d.speedup,
        "Measured = output TPS with SD / without, same prompts and concurrency. Estimate S = t_ar * AL / t_sd "
        "with mean step latencies of the two runs and the SD run's AL."),
    Table("speedup_by_category", "Speedup per category and concurrency: measured and Appendix-G estimate", (
        Column("dataset_config", "config"), Column("sd_label", "SD run"), Column("concurrency", "c", "int"),
        Column("category", "category"), Column("num_paired", "paired requests", "int"),
        Column("latency_speedup", "latency speedup", "x"),
        Column("latency_ci", "95% CI", value=lambda r: _ci(r, "latency_speedup_ci_low", "latency_speedup_ci_high")),
        Column("decode_speedup", "decode speedup", "x"),
        Column("decode_ci", "95% CI", value=lambda r: _ci(r, "decode_speedup_ci_low", "decode_speedup_ci_high")),
        Column("tokens_per_decode_step", "tokens / decode step"),
        Column("estimated_speedup", "Appendix-G estimate", "x"),
        Column("estimate_ci", "95% CI", value=lambda r: _ci(r, "estimated_speedup_ci_low", "estimated_speedup_ci_high"))),
        lambda d: d.speedup_by_category,
        "Requests of the SD run and its baseline paired by prompt. Latency speedup = sum of baseline E2E / sum of "
        "SD E2E (llama.cpp's latency_speedup); decode speedup = mean per-request decode speed (tokens - 1) / "
        "(t_N - t_1) with SD over without (llama.cpp's decode_speedup, from the client's clock); estimate = "
        "t_ar * AL_category / t_sd with the point's step times. Intervals: paired bootstrap over the category's "
        "requests (estimate: the AL's interval)."),
    Table("best_draft_length", "Best draft length per batch size", (
        Column("dataset_config", "config"), Column("concurrency", "c", "int"),
        Column("best_draft_length", "best K", "int"), Column("best_output_tps", "output TPS"),
        Column("candidates_output_tps", "output TPS by K")), lambda d: d.best_draft_length),
    Table("losslessness", "Losslessness: SD outputs against the baseline's, token by token", (
        Column("dataset_config", "config"), Column("sd_label", "SD run"), Column("baseline_label", "baseline run"),
        Column("point", "point"), Column("temperature_sd", "temperature"), Column("num_compared", "compared", "int"),
        Column("share_identical", "identical", "pct"), Column("num_divergent", "divergent", "int"),
        Column("earliest_divergence", "earliest divergence (token)", "int"),
        Column("median_divergence", "median divergence (token)", "int"), Column("ids", "ids"),
        Column("skipped", "not compared")), lambda d: d.losslessness,
        "Same prompts (identical prompt token ids), same load point. At temperature 0 speculative decoding must "
        "reproduce the baseline's tokens, but batched kernels are not bitwise deterministic, so a small share of "
        "late divergences is expected: flagged, not rejected. Re-encoded ids (engines that stream text only) "
        "make divergence indices approximate."),
    Table("phases", "Thinking vs answer: acceptance and latency per phase", (
        Column("label", "run"), Column("dataset_config", "config"), Column("point", "point"), Column("phase", "phase"),
        Column("num_requests", "requests", "int"), Column("num_tokens", "tokens", "int"),
        Column("token_share", "share of tokens", "pct"), Column("num_steps", "steps", "int"),
        Column("acceptance_length", "AL"), Column("ci", "95% CI", value=_ci),
        Column("mean_acceptance_rate", "accepted / drafted"), Column("source", "source"),
        Column("tokens_per_s", "tokens/s in phase"), Column("inter_chunk_p50_s", "inter-chunk p50 (ms)", "ms"),
        Column("inter_chunk_p99_s", "inter-chunk p99 (ms)", "ms"),
        Column("time_to_answer_p50_s", "time to answer p50 (ms)", "ms"), Column("rules", "split rules")),
        lambda d: (d.phases or {}).get("rows") or [],
        "Thinking = output tokens up to and including the boundary (</think>, harmony <|channel|>final<|message|>), "
        "answer = the rest. A step (chunk) belongs to the phase of its first token, so the step spanning the "
        "boundary counts as thinking. Source: the engine's per-step detail (vLLM --per-request-spec-decode-metrics "
        "detailed) when every record has it, else chunks. Tokens/s and inter-chunk latency exclude TTFT."),
    Table("phase_position_rates", "Per-position conditional acceptance per phase", (
        Column("label", "run"), Column("dataset_config", "config"), Column("point", "point"), Column("phase", "phase"),
        Column("position", "position", "int"), Column("conditional_acceptance_rate", "AR_i"),
        Column("ci", "95% CI", value=lambda r: _ci(r, "ci_low", "ci_high")),
        Column("marginal_acceptance_rate", "P(>= i)"), Column("source", "source")),
        lambda d: (d.phases or {}).get("position_rates") or []),
    Table("latency", "Latency percentiles per load point", (
        Column("label", "run"), Column("dataset_config", "config"), Column("requested_concurrency", "c", "int"),
        *_latency_columns()), lambda d: d.points),
    Table("peers", "Peer view: what other tools would print for the same traffic", (
        Column("label", "run"), Column("point", "point"), Column("tool", "tool"), Column("version", "version"),
        Column("figures", "their figures"), Column("our_acceptance_length", "our AL"), Column("basis", "computed from"),
        Column("notes", "notes")),
        lambda d: peer_rows(d.details, {r["run"]: r["label"] for r in d.runs}),
        "Each tool's own definitions applied to our records (docs/metrics.md maps every figure to ours): vLLM's AL "
        "is over drafted steps from counter deltas, its per-position rates are marginals; SGLang's accept_length is "
        "the server's running mean; llama.cpp pools accepted / drafted; aiperf reports request- and token-weighted "
        "AL; specdec_bench averages untrimmed chunk sizes per request."),
    Table("coverage", "Coverage: planned request-turns measured, per load point and category", (
        Column("label", "run"), Column("point", "point"), Column("category", "category"),
        Column("planned", "planned", "int"), Column("measured", "measured", "int"), Column("failed", "failed", "int"),
        Column("missing", "missing", "int"), Column("share", "share", "pct"),
        Column("below", "below bound", value=lambda r: "yes" if r["below"] else ""),
        Column("superseded", "superseded (retried)", "int")),
        lambda d: coverage_rows(d.details, {r["run"]: r["label"] for r in d.runs}),
        "Measured = successful request-turns; failed = the last record failed; missing = no record (a run that "
        "stopped). A category below the bound (95%, docs/metrics.md) is flagged coverage_low: its figures stand "
        "for the survivors. Superseded: failed records a --retry-errors resume measured again (history, in no "
        "figure)."),
    Table("flags", "Flags", (
        Column("run", "run"), Column("point", "point"), Column("flag", "flag"), Column("kind", "kind"),
        Column("count", "count", "int"), Column("detail", "detail")), lambda d: d.flags),
)
