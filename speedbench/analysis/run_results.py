"""``results.json``: per load point, acceptance from every source and latency / throughput figures.

The one routine from a run folder (:class:`speedbench.analysis.run_folder.RunFolder`: records + counters +
manifest) to numbers: ``speedbench run`` writes ``results.json`` with it, ``speedbench report``
recomputes with it, and the board uses the same pieces (:mod:`speedbench.metrics.acceptance.from_records`
for acceptance, :mod:`speedbench.metrics.load_point` for latency, :mod:`speedbench.metrics.acceptance.draft_length`
for K). All formulas are ``speedbench.metrics``'.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedbench.analysis.consistency import check_record
from speedbench.analysis.results_types import RunResults
from speedbench.analysis.run_coverage import coverage_fields, run_plan
from speedbench.analysis.selection import successful
from speedbench.metrics.client_timing import client_timing
from speedbench.metrics.degenerate import degenerate_guard
from speedbench.metrics.acceptance.agreement import compare_sources, counter_summary, explain_lost_streams
from speedbench.metrics.acceptance.draft_length import (
    declared_draft_length,
    declared_variable_draft_length,
    reported_draft_length,
    resolve_draft_length,
    server_draft_nodes,
)
from speedbench.metrics.load_point import point_latency
from speedbench.metrics.acceptance.from_records import RecordAcceptance, record_acceptance
from speedbench.metrics.results import to_jsonable
from speedbench.metrics.acceptance.steps import TOKENS_PER_DECODE_STEP
from speedbench.peers.view import peer_views
from speedbench.records import MANIFEST_NAME, RECORDS_NAME, TurnRecord
from speedbench.analysis.run_folder import RunFolder, read_run_folder
from speedbench.settings import AGREEMENT_TOLERANCE, NUM_RESAMPLES

RESULTS_FORMAT_VERSION = 1


@dataclass
class PointResult:
    """One load point's figures (``to_dict`` is the ``results.json`` entry)."""

    run_point: str
    load_shape: str | None
    requested_concurrency: int | None
    request_rate: float | None
    achieved_concurrency: float | None
    achieved_concurrency_full_request: float | None
    num_requests: int
    num_errors: int
    errors_by_kind: dict[str, int]
    num_warmup_excluded: int
    finish_reasons: dict[str, int]
    draft_length: int | None
    draft_length_given: bool
    primary_acceptance_source: str | None
    acceptance: dict[str, Any]
    agreement: dict[str, Any]
    latency: dict | None
    totals: dict[str, int]
    flags: list[str] = field(default_factory=list)
    # Record rules broken (speedbench.analysis.consistency, the rules the leaderboard applies): count per rule.
    consistency: dict[str, int] = field(default_factory=dict)
    # The client's own timing health (speedbench.metrics.client_timing): lagged records' share.
    client_timing: dict[str, Any] = field(default_factory=dict)
    # What vLLM, SGLang, llama.cpp, aiperf and specdec_bench would print for this traffic (speedbench.peers).
    peers: dict[str, Any] = field(default_factory=dict)
    # The degenerate-speculation guard (speedbench.metrics.degenerate): pinned and looping shares.
    degenerate: dict[str, Any] = field(default_factory=dict)
    # Per-step draft lengths (speedbench.metrics.acceptance.per_step): whether any source saw K vary (None:
    # none can tell), and steps by drafted count ({"K": steps}) from the first source that counted them.
    variable_draft_length: bool | None = None
    draft_length_histogram: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def tokens_per_decode_step(self) -> float | None:
        """Of the primary source: what Appendix G's estimate uses."""
        primary = self.acceptance.get(self.primary_acceptance_source or "") or {}
        return primary.get(TOKENS_PER_DECODE_STEP)


def _sources(acc: RecordAcceptance, counters: dict | None) -> tuple[dict[str, Any], list[str]]:
    sources: dict[str, Any] = {}
    flags: list[str] = []
    if acc.chunks is not None:
        sources["chunks"] = {**acc.chunks.to_dict(), "chunks_are_steps": acc.chunks_are_steps}
        merged = (acc.chunks.trim_report or {}).get("num_merged_chunks", 0)
        if merged:
            stalled = (acc.chunks.trim_report or {}).get("num_stalled_chunks", 0)
            flags.append(f"merged_chunks: {merged - stalled} chunk(s) larger than K+1 = {acc.chunks.draft_length + 1} "
                         f"tokens and {stalled} after a stall (engine or client coalesced steps); chunk-based "
                         "acceptance excludes them")
        if not acc.chunks_are_steps:
            flags.append("chunks_not_steps: this engine's chunks are not verification steps; "
                         "the chunk source is not an acceptance measurement")
    if acc.engine is not None:
        cov = acc.engine_coverage
        sources["engine"] = {**acc.engine.to_dict(), "sources": cov.sources, "exact": True,
                             "num_requests_with_stats": cov.num_requests_with_stats,
                             "num_accepted_tokens": cov.num_accepted_tokens, "num_draft_tokens": cov.num_draft_tokens,
                             "num_accepted_past_max_tokens": cov.num_accepted_past_max_tokens,
                             "num_prefix_cache_placeholder_steps": cov.num_placeholder_steps}
    if counters is not None:
        sources["counters"] = counters
        if not counters["complete"]:
            flags.append("counters_incomplete: the point was resumed; counter deltas cover only part of it")
    return sources, flags


def _draft_lengths(sources: dict[str, Any]) -> tuple[bool | None, dict | None, list[str]]:
    """The point's ``variable_draft_length`` and ``draft_length_histogram`` from its sources, and its flag."""
    flags = [(s or {}).get("variable_draft_length") for s in sources.values()]
    histogram = next((s["draft_length_histogram"] for s in sources.values()
                      if (s or {}).get("draft_length_histogram")), None)
    variable = True if True in flags else (False if False in flags else None)
    if not variable:
        return variable, histogram, []
    shown = f" ({histogram} steps by drafted count)" if histogram else ""
    return variable, histogram, [f"variable_draft_length: the draft length varied from step to step{shown}; "
                                 "per-position rates count each position over the steps that drafted it, "
                                 "or are null where no per-step counts say which did"]


def _totals(ok: list[TurnRecord], measured: list[TurnRecord], acc: RecordAcceptance) -> dict[str, int | None]:
    cov = acc.engine_coverage
    return {"requests": len(measured), "ok": len(ok), "chunks": sum(len(r.chunk_tokens) for r in ok),
            "output_tokens": sum(r.output_tokens for r in ok),
            "engine_verify_steps": sum(r.engine_stats.verify_steps or 0 for r in ok if r.engine_stats),
            "engine_accepted_tokens": sum(r.engine_stats.accepted_tokens or 0 for r in ok if r.engine_stats),
            "engine_draft_tokens": sum(r.engine_stats.draft_tokens or 0 for r in ok if r.engine_stats),
            "engine_decode_steps": cov.num_decode_steps if cov else 0,
            # None when the engine does not say which steps drafted (llama.cpp): unknown is not 0
            "engine_drafted_steps": cov.num_drafted_steps if cov else None,
            **_later_turn_answers(ok)}


def _later_turn_answers(ok: list[TurnRecord]) -> dict[str, int | None]:
    """How the earlier answers entered the later turns' prompts (speedbench.tokenization.conversation;
    None when no record says: first turns only, or records written before the fields existed)."""
    later = [r for r in ok if r.turn_index and r.prompt_answers_spliced is not None]
    return {"later_turns": len(later) if later else None,
            **{f"later_turn_answers_{name}": sum(getattr(r, f"prompt_answers_{name}") or 0 for r in later)
               if later else None for name in ("spliced", "as_text", "mismatched")}}


def _later_turn_flags(totals: dict) -> list[str]:
    mismatched = totals.get("later_turn_answers_mismatched")
    if not mismatched:
        return []
    return [f"multi_turn_mismatch: {mismatched} earlier answer(s) in {totals['later_turns']} later-turn prompt(s) "
            "entered as text whose tokens are not the engine's ids (a token of the whole encoding crosses the "
            "answer's edge; docs/protocol.md)"]


def _consistency(records: list[TurnRecord], draft_length: int | None,
                 draft_nodes: int | None = None) -> tuple[dict[str, int], list[str]]:
    """The shared record rules on the successful records (skipped while K is unknown)."""
    if draft_length is None:
        return {}, []
    counts: Counter = Counter()
    examples: dict[str, str] = {}
    for record in records:
        for violation in check_record(record, draft_length, draft_nodes=draft_nodes):
            counts[violation.rule] += 1
            examples.setdefault(violation.rule, str(violation))
    flags = [f"consistency: {n} request(s) break rule {rule}, e.g. {examples[rule]}" for rule, n in sorted(counts.items())]
    return dict(counts), flags


def analyse_point(point: str, records: list[TurnRecord], engine: str, counter_entry: dict | None,
                  tolerance: float, num_resamples: int, draft_length: int | None = None,
                  draft_nodes: int | None = None, synthetic: bool = False, variable: str | None = None) -> PointResult:
    """Every figure of one load point (warmup and failed requests left out of the figures);
    ``draft_nodes``: a draft tree's nodes per verify (the server's description), None for a chain;
    ``synthetic``: the engine replaced acceptance by synthetic rates (the pinned guard says so)."""
    measured = [r for r in records if not r.warmup]
    ok = successful(records)  # the records the acceptance figures come from (speedbench.analysis.selection)
    counters = counter_summary(engine, counter_entry, len(ok))
    engine_k = reported_draft_length(ok)
    acc = record_acceptance(ok, resolve_draft_length(draft_length, engine_k, (counters or {}).get("draft_length")),
                            num_resamples, variable=variable)
    placeholders = acc.engine_coverage.num_placeholder_steps if acc.engine_coverage else 0
    if counters is not None and (placeholders or acc.draft_length):
        # the counters hold vLLM's placeholder steps too: same definition; and K tells whether it varied
        counters = counter_summary(engine, counter_entry, len(ok), placeholders, acc.draft_length)
    mismatch = ([f"draft_length_mismatch: --draft-length {draft_length} but the engine reports K = {engine_k}"]
                if draft_length and engine_k and draft_length != engine_k else [])
    sources, flags = _sources(acc, counters)
    variable, histogram, k_flags = _draft_lengths(sources)
    agreement, agreement_flags = compare_sources(acc, counters, ok, tolerance)
    agreement_flags = explain_lost_streams(agreement_flags, [r for r in measured if not r.ok])
    timing = point_latency(ok, point)
    latency, slot_occupancy = timing.summary, timing.achieved_concurrency_full_request
    consistency, consistency_flags = _consistency(ok, acc.draft_length if draft_length is None else draft_length,
                                                  draft_nodes)
    errors = Counter(r.error_kind for r in measured if not r.ok)
    first = measured[0] if measured else None
    health = client_timing(ok)
    totals = _totals(ok, measured, acc)
    guard = degenerate_guard(ok, synthetic, acc.draft_length)
    lag_flags = ([f"client_lag: {health.num_client_lagged} of {health.num_records} request(s) reached the client in "
                  "one read or a burst faster than any engine decodes (a busy client or server frontend), left out "
                  "of the step latency, TPOT and per-user speed figures"]
                 if health.num_client_lagged else [])
    return PointResult(
        run_point=point, load_shape=first.load_shape if first else None,
        requested_concurrency=first.requested_concurrency if first else None,
        request_rate=first.request_rate if first else None,
        achieved_concurrency=latency.achieved_concurrency if latency else None,
        achieved_concurrency_full_request=slot_occupancy, num_requests=len(measured),
        num_errors=sum(errors.values()), errors_by_kind=dict(errors),
        num_warmup_excluded=sum(1 for r in records if r.warmup),
        finish_reasons=dict(Counter(r.finish_reason for r in ok)), draft_length=acc.draft_length,
        draft_length_given=draft_length is not None,
        primary_acceptance_source=acc.primary_name or ("counters" if counters else None),
        acceptance=sources, agreement=agreement, latency=latency.to_dict() if latency else None,
        totals=totals,
        flags=acc.flags + mismatch + flags + agreement_flags + consistency_flags + lag_flags + _later_turn_flags(totals)
        + guard.flags + k_flags, consistency=consistency, client_timing=health.to_dict(),
        peers=peer_views(records, engine, counter_entry), degenerate=guard.to_dict(),
        variable_draft_length=variable, draft_length_histogram=histogram)


def compute_results(run: str | Path | RunFolder, tolerance: float = AGREEMENT_TOLERANCE,
                    num_resamples: int = NUM_RESAMPLES,
                    draft_length: int | None = None) -> dict:
    """``results.json`` as a JSON object: :func:`run_results`' ``to_dict()``."""
    return run_results(run, tolerance, num_resamples, draft_length).to_dict()


def run_results(run: str | Path | RunFolder, tolerance: float = AGREEMENT_TOLERANCE,
                num_resamples: int = NUM_RESAMPLES, draft_length: int | None = None) -> RunResults:
    """Results of every load point of a run folder (a path, read with
    :func:`speedbench.analysis.run_folder.read_run_folder`, or a folder already read), typed
    (:mod:`speedbench.analysis.results_types`). ``draft_length`` is K as the caller knows it;
    without it, K as the run declared it (:mod:`speedbench.metrics.acceptance.draft_length`)."""
    folder = run if isinstance(run, RunFolder) else read_run_folder(run)
    manifest = folder.manifest
    server_info = (manifest.server or {}).get("server_info")
    if draft_length is None:
        draft_length = declared_draft_length(options=manifest.options, engine_info=folder.engine_info,
                                             server_info=server_info)
    synthetic = (folder.engine_info or {}).get("speculation") == "synthetic"
    points = [analyse_point(point, folder.point_records(point), manifest.engine, folder.counters.get(point),
                            tolerance, num_resamples, draft_length, server_draft_nodes(server_info),
                            synthetic, declared_variable_draft_length(server_info, folder.engine_info)).to_dict()
              for point in folder.point_names]
    _add_coverage(folder, points)
    return RunResults.from_dict(to_jsonable({
        "format_version": RESULTS_FORMAT_VERSION,
        "engine": manifest.engine, "model_id": manifest.model_id,
        "engine_version": manifest.engine_version, "dataset_config": manifest.dataset_config,
        "manifest": MANIFEST_NAME, "records": RECORDS_NAME, "points": points,
        # the subset a run took of its config (client/data/selection.py); partial: not every row
        "selection": (manifest.options or {}).get("selection"),
    }), "results")


def _add_coverage(folder: RunFolder, points: list[dict]) -> None:
    """Each point's coverage and superseded records (speedbench.analysis.run_coverage), its flags appended."""
    planned = run_plan(folder)
    for point in points:
        extra = coverage_fields(folder, point["run_point"], planned)
        point["flags"] = list(point["flags"]) + extra.pop("flags")
        point.update(extra)


__all__ = ["PointResult", "RESULTS_FORMAT_VERSION", "analyse_point", "compute_results", "run_results"]
