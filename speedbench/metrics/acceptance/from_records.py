"""Records -> acceptance: the one path the client's results, the report and the board share.

Sources, in order of trust (``speedbench/records.py`` defines the steps):

- ``engine``: the engine's exact per-request statistics (vLLM ``metrics.speculative_decoding``,
  SGLang ``meta_info``, llama.cpp ``timings``, TensorRT-LLM ``/perf_metrics``). Primary whenever
  every measured record carries them; histograms over drafted steps when every record has one
  (padded to K + 1: SGLang's histogram is only as long as the largest count accepted), else
  drafted-step counts, else decode-step counts (llama.cpp);
- ``chunks``: streamed chunk sizes as decode steps, a fallback. A chunk larger than K + 1, or one
  that arrived after a stall, holds several steps (the real vLLM frontend merges chunks even at
  concurrency 1); such chunks are detected, counted and left out, never read as one long step;
- ``counters``: run-level Prometheus deltas (:mod:`speedbench.metrics.acceptance.counter_sources`).

Both figures are reported per source and named: ``acceptance_length_drafted`` (1 + accepted /
drafted steps, vLLM's definition) and ``tokens_per_decode_step`` (emitted tokens per decode step,
what Appendix G needs). Sources are compared like with like (:mod:`.agreement`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from speedbench.metrics.acceptance.summary import AcceptanceSummary, summarize_acceptance
from speedbench.metrics.acceptance.tables import (
    RequestAcceptance,
    requests_from_counts,
    requests_from_histograms,
    requests_from_step_sizes,
)
from speedbench.metrics.acceptance.trimming import AcceptanceWarning, TrimRules
from speedbench.metrics.acceptance.draft_length import statistics_draft_length
from speedbench.metrics.acceptance.per_step import (
    draft_length_counts,
    draft_length_histogram,
    variable_draft_length,
    position_counts,
)
from speedbench.metrics.acceptance.steps import StepCounts, budget_per_step_arrays, per_step_arrays, record_steps
from speedbench.metrics.validation import MetricInputError


@dataclass
class EngineCoverage:
    """Which records the engine source covers, and from what."""

    sources: list[str]
    num_requests_with_stats: int
    num_requests: int
    num_accepted_tokens: int
    num_draft_tokens: int | None
    num_drafted_steps: int | None
    num_decode_steps: int
    num_accepted_past_max_tokens: int
    num_placeholder_steps: int = 0  # vLLM prefix-cache placeholder steps left out (speedbench.metrics.acceptance.steps)

    @property
    def complete(self) -> bool:
        return self.num_requests_with_stats == self.num_requests


def _common(records) -> dict:
    return dict(categories=[r.category for r in records], question_ids=[r.question_id for r in records],
                finish_reasons=[r.finish_reason or "" for r in records])


def per_step_columns(rows, k: int | None) -> tuple[dict, list[int], int] | None:
    """Per request the position counts and the steps by drafted count (:mod:`.per_step`) from the
    engine's per-step arrays, their drafted tokens, and K (the largest of the engine's K and any step's
    draft); None unless every record has per-step arrays."""
    # the engine's own arrays (vLLM), else the stream's when the engine's drafts fit the budget (llama.cpp)
    arrays = [per_step_arrays(r) or budget_per_step_arrays(r, k) for r in rows]
    if not arrays or any(a is None for a in arrays):
        return None
    k_max = max([int(k or 0)] + [max(d, default=0) for d, _ in arrays])
    if k_max < 1:
        return None
    columns = {"position_counts": np.stack([position_counts(d, a, k_max) for d, a in arrays]),
               "draft_length_counts": np.stack([draft_length_counts(d, k_max) for d, _ in arrays])}
    return columns, [sum(d) for d, _ in arrays], k_max


def _engine_request_table(rows, counts: list[StepCounts], k: int | None) -> tuple[RequestAcceptance, list]:
    """The table, and per record its drafted tokens (from the per-step arrays when there are some)."""
    histograms = [c.acceptance_histogram for c in counts]  # vLLM's placeholder step removed (steps.py)
    decode = dict(decode_steps=[c.decode_steps for c in counts], decode_tokens=[c.decode_tokens for c in counts])
    per_step = per_step_columns(rows, k)
    columns, drafted = ({}, [c.drafted_tokens for c in counts]) if per_step is None else per_step[:2]
    k = k if per_step is None else per_step[2]
    per_record = list(drafted)
    drafted = drafted if None not in drafted else None
    if all(h for h in histograms) and (k or max(len(h) for h in histograms) >= 2):
        table = requests_from_histograms(histograms, draft_length=k, drafted=drafted, per_step=columns,
                                         **_common(rows), **decode)
    elif all(c.drafted_steps is not None for c in counts):
        table = requests_from_counts([c.drafted_steps for c in counts], [c.accepted_tokens for c in counts],
                                     drafted, draft_length=k, per_step=columns, **_common(rows), **decode)
    else:  # llama.cpp: its per-request timings do not say which steps drafted
        table = requests_from_counts([c.decode_steps for c in counts], [c.accepted_tokens for c in counts],
                                     drafted, draft_length=k, step_kind="decode", per_step=columns,
                                     **_common(rows), **decode)
        if per_step is None:  # not every request's stream adds up to its totals (steps.budget_per_step_arrays)
            table.per_position_unknown = ("the engine reports per request only drafted and accepted totals over "
                                          "its decode steps, not which steps drafted how many tokens")
    return table, per_record


def engine_table(records, draft_length: int | None = None) -> tuple[RequestAcceptance, EngineCoverage] | None:
    """The engine source's per-request table over the records that have exact statistics."""
    pairs = [(r, s) for r in records if (s := record_steps(r)) is not None]
    if not pairs:
        return None
    rows = [r for r, _ in pairs]
    counts: list[StepCounts] = [s for _, s in pairs]
    k = statistics_draft_length(rows, draft_length)  # the engine's own K, else the run's (SGLang, TRT-LLM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AcceptanceWarning)
        table, drafted_tokens = _engine_request_table(rows, counts, k)
    drafted_steps = [c.drafted_steps for c in counts]
    coverage = EngineCoverage(
        sources=sorted({r.engine_stats.source for r in rows}), num_requests_with_stats=len(rows),
        num_requests=len(records), num_accepted_tokens=sum(c.accepted_tokens for c in counts),
        num_draft_tokens=None if None in drafted_tokens else sum(drafted_tokens),
        num_drafted_steps=None if None in drafted_steps else sum(drafted_steps),
        num_decode_steps=sum(c.decode_steps for c in counts),
        num_accepted_past_max_tokens=sum(c.accepted_past_max_tokens for c in counts),
        num_placeholder_steps=sum(c.placeholder_steps for c in counts))
    return table, coverage


def chunk_table(records, draft_length: int | None, rules: TrimRules | None = None) -> RequestAcceptance | None:
    """The chunk source's per-request table (None for K = 0 or without chunks)."""
    rows = [r for r in records if r.chunk_tokens]
    if not rows or (draft_length is not None and draft_length < 1):
        return None  # K = 0 (the no-speculation baseline): no draft tokens to measure
    # Gaps judge only streams the engine cannot vouch for: where its decode steps equal the
    # chunks after the prefill's, every chunk is one step however late it came.
    times = [None if chunks_verified(r) else [t / 1e9 for t in r.chunk_ns] for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AcceptanceWarning)  # merged chunks and inferred K are reported
        return requests_from_step_sizes([r.chunk_tokens for r in rows], draft_length=draft_length,
                                        rules=rules or TrimRules(), chunk_times=times, **_common(rows))


def variable_k_reason(engine: RequestAcceptance | None, k: int | None) -> str | None:
    """Why the chunk source cannot assume K drafted tokens per step (None: nothing says K varied).

    Chunk sizes say what a step accepted, never what it drafted: the engine's counts decide. K varied
    when its per-step counts hold more than one draft length, or its drafted tokens fall short of
    steps x K (over drafted steps, or over every decode step when it does not say which drafted)."""
    if engine is None or not k:
        return None
    if engine.draft_length_counts is not None:
        counts = engine.draft_length_counts.sum(axis=0)
        if variable_draft_length(counts) or counts[0] > 0:
            return (f"the engine's per-step counts show draft lengths {draft_length_histogram(counts)} "
                    f"(K = number of tokens drafted: steps), not K = {k} on every step")
        return None
    if engine.drafted_from_k or engine.drafted_unknown:
        return None
    steps = int(engine.steps.sum())
    drafted = int(engine.drafted.sum())
    if drafted < steps * int(k):
        kind = "drafted" if engine.step_kind == "drafted" else "decode"
        return (f"the engine drafted {drafted} tokens over {steps} {kind} steps, fewer than steps x K = "
                f"{steps * int(k)}: K varied from step to step")
    return None


def mark_variable_k(chunks: RequestAcceptance | None, reason: str | None) -> RequestAcceptance | None:
    """Per-position rates and drafted tokens of the chunk source left unknown, with ``reason``."""
    if chunks is not None and reason:
        chunks.per_position_unknown = f"chunk sizes do not say what each step drafted; {reason}"
        chunks.drafted_unknown = chunks.per_position_unknown
        chunks.k_varied = True
    return chunks


def chunks_verified(record) -> bool:
    steps = record_steps(record)
    return steps is not None and sum(1 for t in record.chunk_tokens[1:] if t > 0) == steps.decode_steps


def primary_name(engine: EngineCoverage | None, chunks_present: bool, chunks_are_steps: bool) -> str | None:
    """The primary source: ``engine`` when every record has exact statistics, else ``chunks`` when
    chunks are steps, else the partial engine source."""
    if engine is not None and engine.complete:
        return "engine"
    if chunks_present and chunks_are_steps:
        return "chunks"
    return "engine" if engine is not None else None


def primary_table(records, draft_length: int | None,
                  variable: str | None = None) -> tuple[RequestAcceptance | None, str | None]:
    """The primary source's per-request table of ``records`` and its name (the board's input);
    ``(None, None)`` where :func:`primary_name` names none, as :attr:`RecordAcceptance.primary` is None:
    chunks that are not decoding steps (``--engine openai``) are no acceptance measurement."""
    engine = engine_table(records, draft_length)
    chunk = mark_variable_k(chunk_table(records, draft_length),
                            _chunk_reason(None if engine is None else engine[0], draft_length, variable))
    name = primary_name(None if engine is None else engine[1], chunk is not None,
                        all(r.chunks_are_steps for r in records))
    return {"engine": engine and engine[0], "chunks": chunk}.get(name), name


@dataclass
class RecordAcceptance:
    """The per-request sources of one set of records (one load point, one run, or a board entry)."""

    engine: AcceptanceSummary | None
    engine_coverage: EngineCoverage | None
    chunks: AcceptanceSummary | None
    chunks_untrimmed: AcceptanceSummary | None
    chunks_are_steps: bool
    draft_length: int | None
    flags: list[str] = field(default_factory=list)

    @property
    def primary_name(self) -> str | None:
        """See :func:`primary_name`."""
        return primary_name(self.engine_coverage, self.chunks is not None, self.chunks_are_steps)

    @property
    def primary(self) -> AcceptanceSummary | None:
        return {"engine": self.engine, "chunks": self.chunks}.get(self.primary_name)


def _declared(table: RequestAcceptance | None, reason: str | None) -> None:
    """The run says K varies (``variable``, :func:`...draft_length.declared_variable_draft_length`): without
    per-step counts the engine source's rates are unknown too."""
    if table is not None and reason and table.position_counts is None:
        table.per_position_unknown = table.per_position_unknown or f"{reason}; no per-step drafted counts"
        table.k_varied = True


def _chunk_reason(engine: RequestAcceptance | None, k: int | None, variable: str | None) -> str | None:
    """Why the chunk source cannot assume K per step: the engine's per-step counts decide when it sent
    them; otherwise its totals, else the run's own description (``variable``), which also leaves the
    engine source's rates unknown."""
    if engine is not None and engine.draft_length_counts is not None:
        return variable_k_reason(engine, k)
    _declared(engine, variable)
    return (None if engine is None else variable_k_reason(engine, k)) or variable


def record_acceptance(records, draft_length: int | None, num_resamples: int, seed: int = 0,
                      untrimmed: bool = True, variable: str | None = None) -> RecordAcceptance:
    """Every per-request source of ``records`` (measured, successful ones) summarised; ``variable``: why
    the run's own description says K varies from step to step (None: it does not say)."""
    chunk = chunk_table(records, draft_length)
    flags: list[str] = []
    if draft_length is None and chunk is not None:
        draft_length = chunk.draft_length
        flags.append(f"draft_length_inferred: K = {draft_length} from the largest chunk (pass --draft-length)")
    try:
        engine = engine_table(records, draft_length)
    except MetricInputError as error:  # statistics that contradict themselves or K: not a source
        engine = None
        flags.append(f"engine_stats_invalid: the engine's per-request statistics were not used ({error})")
    raw = chunk_table(records, draft_length, TrimRules(last_chunk="keep")) if untrimmed else None
    reason = _chunk_reason(None if engine is None else engine[0], draft_length, variable)
    chunk, raw = mark_variable_k(chunk, reason), mark_variable_k(raw, reason)
    return RecordAcceptance(
        engine=None if engine is None else summarize_acceptance(engine[0], num_resamples=num_resamples, seed=seed),
        engine_coverage=None if engine is None else engine[1],
        chunks=None if chunk is None else summarize_acceptance(chunk, num_resamples=num_resamples, seed=seed),
        chunks_untrimmed=None if raw is None else summarize_acceptance(raw, num_resamples=0, seed=seed),
        chunks_are_steps=all(r.chunks_are_steps for r in records), draft_length=draft_length, flags=flags)


__all__ = ["EngineCoverage", "RecordAcceptance", "chunk_table", "engine_table", "mark_variable_k", "per_step_columns",
           "primary_name", "primary_table", "record_acceptance", "variable_k_reason"]
