"""Thinking vs answer: each request's output split at its phase boundary, figures per phase.

Notation: a record's output ids ``x_0..x_{T-1}`` (``x_0`` is the prefill's token), its streamed
chunks ``c_1..c_N`` carrying ``n_i`` tokens at offsets ``o_i = n_1 + ... + n_{i-1}`` (records with
``output_token_ids_source == "engine"``: the ids are aligned with the chunks), and a boundary
sequence ``b_1..b_L`` (``</think>``: one id for Qwen3 / DeepSeek-R1; the harmony final channel
``<|channel|>final<|message|>``: three ids for GPT-OSS; see
``speedbench.tokenization.phase_boundary``).

**Token split.** ``e`` = the index just past the first occurrence of ``b`` in ``x``: tokens
``x_0..x_{e-1}`` (the marker included) are *thinking*, ``x_e..x_{T-1}`` are *answer*. Without a
boundary in the output, ``PhaseMarkers.prompt_state`` decides:

- ``"open"``: the generation prompt ends inside an open thinking block (DeepSeek-R1's template
  writes ``<think>\\n``), so the output starts in thinking: no boundary means ``e = T`` (all
  thinking: the trace was cut before the answer);
- ``"closed"``: the prompt already holds a whole thinking block (Qwen3 with
  ``enable_thinking=False`` writes an empty one): ``e = 0``, all answer, the output is not searched;
- ``"none"`` (the model opens thinking itself: Qwen3, harmony): a boundary in the output splits;
  without one, ``e = T`` when the output holds the opening sequence (``open_ids``: a trace cut by
  ``max_tokens``), else ``e = 0`` (no thinking at all).

**Step rule (one rule, everywhere).** A step (chunk) belongs to the phase of its *first* token:
chunk i is thinking iff ``o_i < e``. The drafts of a step are proposed from the context before
its first token, so the step that spans the boundary (``o_i < e < o_i + n_i``) is thinking;
a step starting exactly at ``e`` is answer. Token counts per phase are reported both exactly
(by id, ``num_tokens``) and as the steps carry them (``num_step_tokens``).

**Engine detail.** vLLM's ``--per-request-spec-decode-metrics detailed`` adds
``per_step_accepted`` ``a_1..a_S`` (and ``per_step_drafted``) to ``metrics.speculative_decoding``
(kept in ``engine_stats.raw``), one entry per *drafted* step. Step s's first token is at
``p_s = 1 + sum_{r<s} (1 + a_r)``, which holds only when every decode step drafted, so the detail
is used when ``0 <= 1 + S + sum_s a_s - T <= a_S`` (the last step may accept drafts past
``max_tokens``, counted but not emitted) and the engine's decode-step count is not larger than
``S``; otherwise (n-gram speculation: some steps carry no draft) the record's phases come from
chunks only. Same rule: step s is thinking iff ``p_s < e``.

**Acceptance per phase.** Chunks: each record's stream is trimmed once as a whole
(``TrimRules`` defaults: the lone prefill chunk and the cut last chunk dropped, multi-token
chunks after a stall left out, as :func:`speedbench.metrics.acceptance.from_records.chunk_table`
does), the remaining steps are split by phase and handed, with nothing more trimmed, to
:func:`requests_from_step_sizes` and :func:`summarize_acceptance`: per phase
``AL = 1 + accepted / steps``, ``AR_i`` and ``P(>= i)`` by the one set of formulas
(:mod:`speedbench.metrics.acceptance.formulas`). Engine: ``h_j`` = steps of the phase with
``a_s = j``, through :func:`requests_from_histograms`.

**Latency per phase.** Over the token-carrying chunks ``i >= 2`` (TTFT excluded), the gap
``g_i = t_i - t_{i-1}`` is the time chunk i took and belongs to chunk i's phase: phase duration
``sum g_i``, phase tokens ``sum n_i``, ``tokens_per_s`` = pooled tokens / pooled duration,
``inter_chunk_latency_s`` the distribution of ``g_i``; ``time_to_answer_s`` is the arrival of the
first answer chunk minus the scheduled send time (requests that start answering after the prefill).
"""
from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speedbench.metrics.acceptance.summary import summarize_acceptance
from speedbench.metrics.acceptance.per_step_table import requests_from_per_step
from speedbench.metrics.acceptance.tables import as_ragged_float, requests_from_histograms, requests_from_step_sizes
from speedbench.metrics.acceptance.trimming import AcceptanceWarning, TrimRules, stalled_chunks, trim_step_sizes
from speedbench.metrics.acceptance.draft_length import statistics_draft_length
from speedbench.metrics.latency import DistributionStats, distribution_stats
from speedbench.metrics.acceptance.from_records import chunks_verified
from speedbench.metrics.results import JsonDataclass
from speedbench.metrics.acceptance.steps import per_step_arrays, placeholder_step
from speedbench.metrics.validation import MetricInputError, as_ragged_counts
from speedbench.settings import NUM_RESAMPLES

THINKING, ANSWER = "thinking", "answer"
PHASES = (THINKING, ANSWER)
PROMPT_NONE, PROMPT_OPEN, PROMPT_CLOSED = "none", "open", "closed"
PROMPT_STATES = (PROMPT_NONE, PROMPT_OPEN, PROMPT_CLOSED)
# How a record's split was decided (RecordSplit.rule).
RULE_BOUNDARY = "boundary"  # the boundary sequence occurs in the output
RULE_CLOSED_IN_PROMPT = "closed_in_prompt"  # the prompt closed thinking: all answer
RULE_OPEN_NO_BOUNDARY = "open_no_boundary"  # thinking opened (prompt or output), never closed: all thinking
RULE_NO_THINKING = "no_boundary"  # no thinking at all: all answer
# Keeps the phase steps exactly as given: trimming was done on the whole stream first.
_KEEP_ALL = TrimRules(first_chunk="keep", last_chunk="keep")


@dataclass(frozen=True)
class PhaseMarkers:
    """What marks the phases in a model's output (see the module doc for the rules).

    boundary_ids: the sequence whose first occurrence ends thinking; open_ids: the sequence that
    opens it (may be empty); prompt_state: ``"none"``, ``"open"`` or ``"closed"``; source: where
    the markers came from (``"template:think"``, ``"template:harmony"``, ``"ids"``);
    marker_text: the boundary as text, when known.
    """

    boundary_ids: tuple[int, ...]
    open_ids: tuple[int, ...] = ()
    prompt_state: str = PROMPT_NONE
    source: str = "ids"
    marker_text: str | None = None

    def __post_init__(self):
        if not self.boundary_ids or any(int(i) != i or i < 0 for i in self.boundary_ids):
            raise MetricInputError(f"boundary_ids: need one or more non-negative token ids, got {self.boundary_ids!r}")
        if self.prompt_state not in PROMPT_STATES:
            raise MetricInputError(f"prompt_state: {self.prompt_state!r} is not one of none, open, closed")

    def to_dict(self) -> dict[str, Any]:
        return {"boundary_ids": list(self.boundary_ids), "open_ids": list(self.open_ids),
                "prompt_state": self.prompt_state, "source": self.source, "marker_text": self.marker_text}


def find_sequence(ids, sequence) -> int | None:
    """Index of the first occurrence of ``sequence`` in ``ids`` (None when absent).

    Searches with the sequence's ``index`` (C speed on lists and arrays): records arrive as lists,
    and converting each to numpy cost more than the search itself.
    """
    ids = ids.tolist() if isinstance(ids, np.ndarray) else ids
    pattern = [int(i) for i in sequence]
    if not pattern or len(ids) < len(pattern):
        return None
    start = 0
    while True:
        try:
            hit = ids.index(pattern[0], start)
        except ValueError:
            return None
        if list(ids[hit:hit + len(pattern)]) == pattern:
            return hit
        start = hit + 1


def answer_start(output_ids, markers: PhaseMarkers) -> tuple[int, str]:
    """``(e, rule)``: the index of the first answer token (``0..T``) and the rule that decided it."""
    total = len(output_ids)
    if markers.prompt_state == PROMPT_CLOSED:
        return 0, RULE_CLOSED_IN_PROMPT
    start = find_sequence(output_ids, markers.boundary_ids)
    if start is not None:
        return start + len(markers.boundary_ids), RULE_BOUNDARY
    if markers.prompt_state == PROMPT_OPEN or (markers.open_ids and find_sequence(output_ids, markers.open_ids)
                                               is not None):
        return total, RULE_OPEN_NO_BOUNDARY
    return 0, RULE_NO_THINKING


def steps_in_answer(step_tokens, start: int) -> np.ndarray:
    """Per step (chunk): True when its first token is an answer token (``o_i >= e``)."""
    sizes = np.asarray(step_tokens, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes.size else sizes
    return offsets >= start


def engine_step_positions(per_step_accepted, output_tokens: int) -> np.ndarray | None:
    """``p_s``, the first token of every drafted step, when the steps account for the output
    (every decode step drafted; see the module doc), else None."""
    a = np.asarray(per_step_accepted, dtype=np.int64)
    if a.size == 0 or (a < 0).any():
        return None
    emitted = 1 + a.size + int(a.sum())  # the prefill's token, then 1 + a_s per step
    if not 0 <= emitted - int(output_tokens) <= int(a[-1]):
        return None
    return 1 + np.concatenate([[0], np.cumsum(1 + a)[:-1]])


@dataclass
class RecordSplit:
    """One record's phases: ``answer_start`` (e), the rule, and the phase of every chunk / engine step."""

    answer_start: int
    num_tokens: int
    rule: str
    chunk_is_answer: np.ndarray
    chunk_tokens: np.ndarray
    spanning_chunk: int | None  # the chunk that holds both phases' tokens (assigned to thinking)
    step_is_answer: np.ndarray | None = None  # engine steps, when their detail aligns
    step_accepted: np.ndarray | None = None


def split_record(output_ids, chunk_tokens, markers: PhaseMarkers, per_step_accepted=None) -> RecordSplit:
    """Split one record; ``output_ids`` must be aligned with ``chunk_tokens`` (engine ids)."""
    sizes = np.asarray(chunk_tokens, dtype=np.int64)
    if int(sizes.sum()) != len(output_ids):
        raise MetricInputError(f"output_token_ids: {len(output_ids)} ids for {int(sizes.sum())} chunk tokens")
    start, rule = answer_start(output_ids, markers)
    in_answer = steps_in_answer(sizes, start)
    ends = np.cumsum(sizes)
    spans = np.flatnonzero(~in_answer & (ends > start) & (sizes > 0))
    split = RecordSplit(answer_start=start, num_tokens=len(output_ids), rule=rule, chunk_is_answer=in_answer,
                        chunk_tokens=sizes,
                        spanning_chunk=int(spans[0]) if spans.size and 0 < start < len(output_ids) else None)
    if per_step_accepted is not None:
        positions = engine_step_positions(per_step_accepted, len(output_ids))
        if positions is not None:
            split.step_is_answer = positions >= start
            split.step_accepted = np.asarray(per_step_accepted, dtype=np.int64)
    return split


def aligned_ids(record) -> list[int] | None:
    """The record's ids when they are the engine's and line up with its chunks, else None."""
    ids = record.output_token_ids
    if not ids or record.output_token_ids_source != "engine" or sum(record.chunk_tokens) != len(ids):
        return None
    return ids


def per_step_accepted(record) -> list[int] | None:
    """vLLM's ``per_step_accepted`` (``--per-request-spec-decode-metrics detailed``), if the record has
    it and it can cover every decode step: a record whose decode steps (``engine_stats.decode_steps``,
    bounded below by its token-carrying chunks) outnumber the drafted steps had undrafted steps, whose
    tokens the detail does not place, even when drafts accepted past ``max_tokens`` make the token
    count add up."""
    stats = record.engine_stats
    raw = stats.raw if stats is not None and isinstance(stats.raw, dict) else {}
    value = raw.get("per_step_accepted")
    if not (isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return None
    if placeholder_step(record):  # vLLM's prefix-cache placeholder is no step (speedbench.metrics.acceptance.steps)
        value = value[1:]
    elif stats.decode_steps is not None and int(stats.decode_steps) > len(value):
        return None
    return value



# --------------------------------------------------------------------------------------------
# figures per phase over a set of records
# --------------------------------------------------------------------------------------------

@dataclass
class PhaseFigures(JsonDataclass):
    """One phase's figures. ``chunks`` / ``engine`` are :class:`AcceptanceSummary` dicts (None
    without steps in the phase, or without engine detail); ``acceptance_length`` is the primary
    source's (``source``)."""

    phase: str
    num_requests: int  # records with at least one token in the phase
    num_tokens: int  # by id: tokens before / from e
    num_step_tokens: int  # as the steps carry them (the spanning step counted in thinking)
    acceptance_length: float | None
    source: str | None
    chunks: dict | None
    engine: dict | None
    duration_s: DistributionStats  # per record, sum of the phase's inter-chunk gaps
    tokens_per_s: float | None
    inter_chunk_latency_s: DistributionStats


@dataclass
class PhaseResults(JsonDataclass):
    """Per-phase figures of a set of records and what the split did (counts per rule)."""

    markers: dict
    num_records: int
    num_split: int  # records with engine ids aligned with their chunks
    num_without_ids: int
    num_unaligned: int  # re-encoded ids (no chunk alignment) or ids that do not match the chunks
    rules: dict[str, int]
    num_spanning_steps: int  # chunks holding both phases' tokens (assigned to thinking)
    num_engine_detail: int  # records whose engine per-step detail aligned with the output
    source: str | None  # "engine" when every split record had aligned per-step detail, else "chunks"
    thinking_token_share: float | None
    time_to_answer_s: DistributionStats
    phases: dict[str, dict] = field(default_factory=dict)


def _trimmed_keep(records) -> list[np.ndarray]:
    """Per record, which chunks count as steps after whole-stream trimming (as ``chunk_table``)."""
    chunks = as_ragged_counts([r.chunk_tokens for r in records], "chunk_tokens")
    times = [None if chunks_verified(r) else [t / 1e9 for t in r.chunk_ns] for r in records]
    stalled = stalled_chunks(as_ragged_float(times, chunks, "chunk_ns"), chunks)
    _, report = trim_step_sizes(chunks, TrimRules())
    keep = report._keep & ~stalled
    bounds = chunks.offsets
    return [keep[bounds[i]:bounds[i + 1]] for i in range(chunks.num_rows)]


def _labels(records) -> dict:
    return dict(categories=[r.category for r in records], question_ids=[r.question_id for r in records],
                finish_reasons=[r.finish_reason or "" for r in records])


def _chunk_summary(records, splits, keeps, want_answer: bool, draft_length, num_resamples: int, seed: int):
    rows = [s.chunk_tokens[k & (s.chunk_is_answer == want_answer)] for s, k in zip(splits, keeps)]
    if not any(row.size for row in rows):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AcceptanceWarning)  # merged chunks are in the trim report
        table = requests_from_step_sizes(rows, draft_length=draft_length, rules=_KEEP_ALL, **_labels(records))
    return summarize_acceptance(table, num_resamples=num_resamples, seed=seed).to_dict()


def _engine_summary(records, splits, want_answer: bool, draft_length, num_resamples: int, seed: int):
    pairs = [(r, s) for r, s in zip(records, splits) if s.step_is_answer is not None]
    k = statistics_draft_length((r for r, _ in pairs), draft_length)
    if not pairs or not k:
        return None
    masks = [s.step_is_answer == want_answer for _, s in pairs]
    accepted = [s.step_accepted[m] for (_, s), m in zip(pairs, masks)]
    if not any(a.size for a in accepted) or max(int(a.max(initial=0)) for a in accepted) > k:
        return None
    kw = dict(decode_steps=[a.size for a in accepted], decode_tokens=[int(a.size + a.sum()) for a in accepted],
              **_labels([r for r, _ in pairs]))
    drafted = [per_step_arrays(r) for r, _ in pairs]  # K may vary per step (speedbench.metrics.acceptance.per_step)
    if all(d is not None and len(d[0]) == m.size for d, m in zip(drafted, masks)):
        table = requests_from_per_step([np.asarray(d[0])[m] for d, m in zip(drafted, masks)], accepted,
                                       draft_length=k, **kw)
    else:
        table = requests_from_histograms([np.bincount(a, minlength=k + 1) for a in accepted], draft_length=k, **kw)
    return summarize_acceptance(table, num_resamples=num_resamples, seed=seed).to_dict()


def _phase_gaps(record, split: RecordSplit, want_answer: bool) -> tuple[np.ndarray, int]:
    """The inter-chunk gaps (s) of the phase's chunks i >= 2 and the tokens they carried."""
    sizes = split.chunk_tokens
    carrying = sizes > 0
    times = np.asarray(record.chunk_ns, dtype=np.float64)[carrying] / 1e9
    phase = (split.chunk_is_answer == want_answer)[carrying][1:]
    gaps = np.diff(times)[phase]
    return gaps, int(sizes[carrying][1:][phase].sum())


def _latency(records, splits, want_answer: bool) -> tuple[DistributionStats, float | None, DistributionStats]:
    per = [_phase_gaps(r, s, want_answer) for r, s in zip(records, splits)]
    durations = [g.sum() for g, n in per if g.size]
    all_gaps = np.concatenate([g for g, _ in per]) if per else np.zeros(0)
    tokens = sum(n for g, n in per if g.size)
    total = float(np.sum(durations)) if durations else 0.0
    return distribution_stats(durations), (tokens / total if total > 0 else None), distribution_stats(all_gaps)


def _time_to_answer(records, splits) -> DistributionStats:
    values = []
    for r, s in zip(records, splits):
        first = np.flatnonzero(s.chunk_is_answer & (s.chunk_tokens > 0))
        if 0 < s.answer_start < s.num_tokens and first.size:
            values.append((r.chunk_ns[int(first[0])] - r.scheduled_ns) / 1e9)
    return distribution_stats(values)


def _phase(records, splits, keeps, phase: str, draft_length, num_resamples: int, seed: int,
           use_engine: bool) -> PhaseFigures:
    answer = phase == ANSWER
    tokens = [(s.num_tokens - s.answer_start) if answer else s.answer_start for s in splits]
    step_tokens = [int(s.chunk_tokens[s.chunk_is_answer == answer].sum()) for s in splits]
    measure = draft_length is None or draft_length > 0  # K = 0: a baseline, nothing drafted to measure
    chunks = _chunk_summary(records, splits, keeps, answer, draft_length, num_resamples, seed) if measure else None
    engine = _engine_summary(records, splits, answer, draft_length, num_resamples, seed) if measure else None
    primary = engine if use_engine and engine else chunks
    duration, tps, gaps = _latency(records, splits, answer)
    return PhaseFigures(
        phase=phase, num_requests=sum(1 for t in tokens if t > 0), num_tokens=int(sum(tokens)),
        num_step_tokens=int(sum(step_tokens)), acceptance_length=None if primary is None else
        primary.get("acceptance_length"), source=None if primary is None else ("engine" if primary is engine
                                                                               else "chunks"),
        chunks=chunks, engine=engine, duration_s=duration, tokens_per_s=tps, inter_chunk_latency_s=gaps)


def phase_results(records, markers: PhaseMarkers, draft_length: int | None = None, *,
                  num_resamples: int = NUM_RESAMPLES,
                  seed: int = 0) -> PhaseResults:
    """Figures per phase of ``records`` (successful, measured ones; others are skipped uncounted).

    ``draft_length`` is K (0: a baseline, latency only; None: inferred per phase with a warning
    in the summary). Records without ids, or with ids that do not line up with their chunks
    (re-encoded text), are counted and left out.
    """
    records = [r for r in records if r.ok and r.chunk_tokens]
    usable, splits = [], []
    without = unaligned = 0
    for r in records:
        ids = aligned_ids(r)
        if ids is None:
            without += not r.output_token_ids
            unaligned += bool(r.output_token_ids)
            continue
        usable.append(r)
        splits.append(split_record(ids, r.chunk_tokens, markers, per_step_accepted(r)))
    rules = dict(Counter(s.rule for s in splits))
    detail = sum(1 for s in splits if s.step_is_answer is not None)
    use_engine = bool(splits) and detail == len(splits)
    total = sum(s.num_tokens for s in splits)
    keeps = _trimmed_keep(usable) if splits else []
    phases = {p: _phase(usable, splits, keeps, p, draft_length, num_resamples, seed, use_engine).to_dict()
              for p in PHASES} if splits else {}
    return PhaseResults(
        markers=markers.to_dict(), num_records=len(records), num_split=len(splits), num_without_ids=without,
        num_unaligned=unaligned, rules=dict(sorted(rules.items())),
        num_spanning_steps=sum(1 for s in splits if s.spanning_chunk is not None), num_engine_detail=detail,
        source=None if not splits else ("engine" if use_engine else "chunks"),
        thinking_token_share=(sum(s.answer_start for s in splits) / total) if total else None,
        time_to_answer_s=_time_to_answer(usable, splits), phases=phases)


__all__ = ["ANSWER", "PHASES", "PROMPT_CLOSED", "PROMPT_NONE", "PROMPT_OPEN", "PROMPT_STATES", "PhaseFigures",
           "PhaseMarkers", "PhaseResults", "RecordSplit", "THINKING", "aligned_ids", "answer_start", "engine_step_positions",
           "find_sequence", "per_step_accepted", "phase_results", "split_record", "steps_in_answer"]
