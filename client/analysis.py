"""``results.json``: per load point, acceptance from every source and latency/throughput figures.

All formulas are ``speedbench.metrics``'; this module only picks records and routes them.

Acceptance sources (each named in the output):
- ``chunks``: streamed chunk sizes as steps (``requests_from_step_sizes``, default trim rules:
  a lone first prefill token and the cut last chunk dropped). Only meaningful when chunks are
  steps (``chunks_are_steps``) and no chunk exceeds K+1; merged chunks are counted and flagged.
- ``engine``: the engine's per-request statistics (``requests_from_histograms`` when every
  request has a histogram, else ``requests_from_counts`` with verify steps and accepted drafts).
- ``counters``: Prometheus deltas over the point (``acceptance_from_counters``); run-level,
  polluted by other traffic, incomplete when the point was resumed.

Agreement: the step-weighted AL of the chunks is compared with the engine's. For a like-for-like
comparison the chunk figure used here keeps the last chunk (``chunks_untrimmed``) because engines
count the cut last step too. Counters are compared by their token totals (accepted and drafted
tokens against the sums of the per-request statistics), since engines count a counter "draft" and
a verify step differently. A relative difference above the tolerance is listed under ``flags``.
"""
from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from speedbench.client.engines import get_adapter
from speedbench.records import TurnRecord, read_records

RESULTS_FORMAT_VERSION = 1


def _summary_dict(summary) -> dict:
    return summary.to_dict()


def _chunk_acceptance(records: list[TurnRecord], draft_length: int | None, num_resamples: int, rules=None):
    from speedbench.metrics import TrimRules, requests_from_step_sizes, summarize_acceptance

    rows = [r for r in records if r.chunk_tokens]
    if not rows or (draft_length is not None and draft_length < 1):
        return None  # K = 0 (the no-speculation baseline): no draft tokens to measure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merged chunks and inferred K are reported in the summary
        table = requests_from_step_sizes(
            [r.chunk_tokens for r in rows], draft_length=draft_length,
            categories=[r.category for r in rows], question_ids=[r.question_id for r in rows],
            finish_reasons=[r.finish_reason or "" for r in rows], rules=rules or TrimRules())
        return summarize_acceptance(table, num_resamples=num_resamples)


def _engine_acceptance(records: list[TurnRecord], num_resamples: int, fallback_draft_length: int | None):
    from speedbench.metrics import requests_from_counts, requests_from_histograms, summarize_acceptance

    rows = [r for r in records if r.engine_stats is not None and r.engine_stats.verify_steps is not None]
    if not rows:
        return None, None
    stats = [r.engine_stats for r in rows]
    common = dict(categories=[r.category for r in rows], question_ids=[r.question_id for r in rows],
                  finish_reasons=[r.finish_reason or "" for r in rows])
    if all(s.acceptance_histogram for s in stats):
        table = requests_from_histograms([s.acceptance_histogram for s in stats], **common)
    else:
        drafted = [s.draft_tokens for s in stats]
        draft_length = next((s.draft_length for s in stats if s.draft_length), None) or fallback_draft_length
        if draft_length is None and not all(d is not None for d in drafted):
            return None, None
        table = requests_from_counts(
            [s.verify_steps for s in stats], [s.accepted_tokens or 0 for s in stats],
            drafted if all(d is not None for d in drafted) else None, draft_length=draft_length, **common)
    sources = sorted({s.source for s in stats})
    exact = all(s.exact for s in stats)
    totals = {"num_accepted_tokens": sum(s.accepted_tokens or 0 for s in stats),
              "num_draft_tokens": (sum(s.draft_tokens for s in stats)
                                   if all(s.draft_tokens is not None for s in stats) else None)}
    return summarize_acceptance(table, num_resamples=num_resamples), {"sources": sources, "exact": exact,
                                                                         "num_requests_with_stats": len(rows),
                                                                         **totals}


def _counter_acceptance(engine: str, url: str, entry: dict | None, num_requests: int) -> dict | None:
    from speedbench.metrics import acceptance_from_counters, acceptance_length_from_counts, mean_acceptance_rate

    if not entry or "delta" not in entry:
        return None
    adapter = get_adapter(engine)(url)
    counters = adapter.counter_acceptance(entry["delta"], entry.get("delta_per_position") or {})
    if counters is None:
        return None
    result: dict[str, Any] = {"source": counters.source, "complete": bool(entry.get("complete")),
                              "raw_delta": {k: v for k, v in entry["delta"].items() if "spec" in k or "token" in k}}
    if counters.drafts is not None and counters.draft_tokens is not None and counters.accepted_tokens is not None:
        positions = counters.accepted_per_position
        summary = acceptance_from_counters(int(counters.drafts), int(counters.draft_tokens),
                                           int(counters.accepted_tokens),
                                           [int(p) for p in positions] if positions else None)
        result.update(summary.to_dict())
        result["al_definition"] = "1 + accepted / drafts (steps that carried a draft)"
    elif counters.verify_steps is not None and counters.generation_tokens is not None:
        # SGLang: generation tokens = one prefill token per request + verify steps + accepted drafts.
        steps = int(counters.verify_steps)
        accepted = max(0, int(counters.generation_tokens) - steps - num_requests)
        result["acceptance_length"] = float(acceptance_length_from_counts(steps, accepted))
        result["num_steps"], result["num_accepted_tokens"] = steps, accepted
        result["al_definition"] = "1 + (generation tokens - verify steps - requests) / verify steps"
    elif counters.draft_tokens is not None and counters.accepted_tokens is not None:
        result["mean_acceptance_rate"] = float(mean_acceptance_rate(int(counters.accepted_tokens),
                                                                    int(counters.draft_tokens)))
        result["num_draft_tokens"] = int(counters.draft_tokens)
        result["num_accepted_tokens"] = int(counters.accepted_tokens)
    if counters.generation_tokens is not None and counters.accepted_tokens is not None:
        # Forward passes that produced tokens (prefill included): tokens - accepted drafts.
        result["num_token_steps"] = int(counters.generation_tokens - counters.accepted_tokens)
    return result


def _latency(records: list[TurnRecord], requested: int | None):
    from speedbench.metrics import summarize_latency, timings_from_lists

    if not records:
        return None
    timings = timings_from_lists([r.scheduled_ns / 1e9 for r in records],
                                 [[t / 1e9 for t in r.chunk_ns] for r in records],
                                 [r.chunk_tokens for r in records])
    return summarize_latency(timings, requested_concurrency=requested, categories=[r.category for r in records])


def _relative_difference(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return abs(a - b) / abs(b)


def analyse_point(point: str, records: list[TurnRecord], engine: str, url: str, counter_entry: dict | None,
                  tolerance: float, num_resamples: int, draft_length: int | None = None) -> dict:
    from speedbench.metrics import TrimRules

    measured = [r for r in records if not r.warmup]
    ok = [r for r in measured if r.ok]
    first = measured[0] if measured else None
    flags: list[str] = []
    # K: given, else as the engine reports it, else from the counters, else inferred from chunks.
    given = draft_length
    if draft_length is None:
        draft_length = next((r.engine_stats.draft_length for r in ok
                             if r.engine_stats is not None and r.engine_stats.draft_length), None)
    counters = _counter_acceptance(engine, url, counter_entry, len(ok))
    if draft_length is None and counters and counters.get("draft_length"):
        draft_length = counters["draft_length"]
    chunks = _chunk_acceptance(ok, draft_length, num_resamples)
    if draft_length is None and chunks is not None:
        draft_length = chunks.draft_length
        flags.append(f"draft_length_inferred: K = {draft_length} from the largest chunk (pass --draft-length)")
    engine_summary, engine_meta = _engine_acceptance(ok, num_resamples, draft_length)
    untrimmed = _chunk_acceptance(ok, draft_length, 0, TrimRules(last_chunk="keep"))
    sources: dict[str, Any] = {}
    if chunks is not None:
        sources["chunks"] = chunks.to_dict()
        sources["chunks"]["chunks_are_steps"] = all(r.chunks_are_steps for r in ok)
        merged = (chunks.trim_report or {}).get("num_merged_chunks", 0)
        if merged:
            flags.append(f"merged_chunks: {merged} chunk(s) larger than K+1 = {chunks.draft_length + 1} "
                         f"tokens (engine or client coalesced steps); chunk-based acceptance excludes them")
        if not sources["chunks"]["chunks_are_steps"]:
            flags.append("chunks_not_steps: this engine's chunks are not verification steps; "
                         "the chunk source is not an acceptance measurement")
    if engine_summary is not None:
        sources["engine"] = {**engine_summary.to_dict(), **engine_meta}
    if counters is not None:
        sources["counters"] = counters
        if not counters["complete"]:
            flags.append("counters_incomplete: the point was resumed; counter deltas cover only part of it")
    reference_name = "engine" if engine_summary is not None else ("chunks_untrimmed" if untrimmed else None)
    reference = (engine_summary.acceptance_length if engine_summary is not None
                 else (untrimmed.acceptance_length if untrimmed else None))
    agreement: dict[str, Any] = {"reference": reference_name, "tolerance": tolerance, "relative_difference": {}}
    comparable = {"chunks_untrimmed": untrimmed.acceptance_length if untrimmed else None}
    for name, value in comparable.items():
        if name == reference_name or value is None or reference is None:
            continue
        difference = _relative_difference(value, reference)
        agreement["relative_difference"][name] = difference
        if difference is not None and difference > tolerance:
            flags.append(f"disagreement: AL from {name} ({value:.4f}) differs from {reference_name} "
                         f"({reference:.4f}) by {100 * difference:.1f}% (> {100 * tolerance:.1f}%)")
    # Counters and per-request statistics define a step differently (a counter "draft" is a step
    # that carried a draft; an engine verify step may carry none), so their ALs legitimately
    # differ. The token totals do not: accepted and drafted tokens must match.
    if counters is not None and counters.get("complete") and engine_summary is not None:
        for total in ("num_accepted_tokens", "num_draft_tokens"):
            value, expected = counters.get(total), engine_meta.get(total)
            if value is None or expected is None:
                continue
            difference = _relative_difference(float(value), float(expected))
            agreement["relative_difference"][f"counters_{total}"] = difference
            if difference is not None and difference > tolerance:
                flags.append(f"disagreement: {total} from counters ({value}) differs from the engine's "
                             f"per-request sum ({expected}) by {100 * difference:.1f}% (> {100 * tolerance:.1f}%)")
    latency = _latency(ok, first.requested_concurrency if first else None)
    # Little's law over the whole time a request holds its slot (scheduled -> end of stream,
    # [DONE] included), next to the metrics' figure that ends at the last token chunk.
    slot_occupancy = None
    if ok:
        from speedbench.metrics import achieved_concurrency

        start = min(r.scheduled_ns for r in ok)
        span = (max(r.end_ns for r in ok) - start) / 1e9
        slot_occupancy = achieved_concurrency([(r.end_ns - r.scheduled_ns) / 1e9 for r in ok], span)
    errors = Counter(r.error_kind for r in measured if not r.ok)
    primary = "engine" if "engine" in sources else ("chunks" if "chunks" in sources and
                                                     sources["chunks"]["chunks_are_steps"] else
                                                     ("counters" if "counters" in sources else None))
    totals = {
        "requests": len(measured), "ok": len(ok), "chunks": sum(len(r.chunk_tokens) for r in ok),
        "output_tokens": sum(r.output_tokens for r in ok),
        "engine_verify_steps": sum(r.engine_stats.verify_steps or 0 for r in ok if r.engine_stats),
        "engine_accepted_tokens": sum(r.engine_stats.accepted_tokens or 0 for r in ok if r.engine_stats),
        "engine_draft_tokens": sum(r.engine_stats.draft_tokens or 0 for r in ok if r.engine_stats),
    }
    return {
        "run_point": point,
        "load_shape": first.load_shape if first else None,
        "requested_concurrency": first.requested_concurrency if first else None,
        "request_rate": first.request_rate if first else None,
        "achieved_concurrency": latency.achieved_concurrency if latency else None,
        "achieved_concurrency_full_request": slot_occupancy,
        "num_requests": len(measured),
        "num_errors": sum(errors.values()),
        "errors_by_kind": dict(errors),
        "num_warmup_excluded": sum(1 for r in records if r.warmup),
        "finish_reasons": dict(Counter(r.finish_reason for r in ok)),
        "draft_length": draft_length,
        "draft_length_given": given is not None,
        "primary_acceptance_source": primary,
        "acceptance": sources,
        "agreement": agreement,
        "latency": latency.to_dict() if latency else None,
        "totals": totals,
        "flags": flags,
    }


def compute_results(run_dir: str | Path, tolerance: float = 0.02, num_resamples: int = 1000,
                    draft_length: int | None = None) -> dict:
    """Results of every load point of a run folder (records + counters + manifest)."""
    from speedbench.client.runner import COUNTERS_NAME, MANIFEST_NAME, read_counter_points
    from speedbench.client.recording import RECORDS_NAME
    from speedbench.metrics import to_jsonable

    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / MANIFEST_NAME).read_text())
    records = list(read_records(run_dir / RECORDS_NAME))
    counters = read_counter_points(run_dir / COUNTERS_NAME)
    order = manifest.get("options", {}).get("points") or sorted({r.run_point for r in records})
    points = []
    for point in order:
        mine = [r for r in records if r.run_point == point]
        if not mine:
            continue
        points.append(analyse_point(point, mine, manifest["engine"], manifest["url"], counters.get(point),
                                    tolerance, num_resamples, draft_length))
    return to_jsonable({
        "format_version": RESULTS_FORMAT_VERSION,
        "engine": manifest["engine"], "model_id": manifest.get("model_id"),
        "engine_version": manifest.get("engine_version"), "dataset_config": manifest.get("dataset_config"),
        "manifest": MANIFEST_NAME, "records": RECORDS_NAME,
        "points": points,
    })
