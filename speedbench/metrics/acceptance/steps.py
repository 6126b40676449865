"""One definition of a step: decode steps, drafted steps, and the two figures built on them.

A *decode step* is one target forward pass after the prefill; it emits ``1 + j`` tokens when it
accepted ``j`` draft tokens. A *drafted step* carried at least one draft token (every decode
step with draft-model / EAGLE speculation; only some with n-gram speculation). For a request
with ``T`` output tokens (the prefill's token included), ``D`` decode steps, ``A`` accepted drafts
as the engine counts them and ``P`` of those accepted past ``max_tokens`` (never emitted):

    ``T = 1 + D + A - P``

- acceptance length over drafted steps ``AL = 1 + A / S_drafted`` (vLLM's
  ``mean_acceptance_length``, SGLang's and llama.cpp's counters);
- tokens per decode step ``(T - 1) / D`` (what Appendix G's ``S = t_ar * AL / t_sd`` needs:
  ``t_sd`` is the mean over all decode steps).

The two are equal when every decode step drafts and nothing was cut at ``max_tokens``.
Engines report ``A`` and usually ``S_drafted`` but not ``D``; :func:`derive_decode_steps` gets it
from the identity. See ``speedbench/records.py`` for the record fields.

**vLLM's prefix-cache placeholder step.** vLLM 0.32 pads a new request whose prompt is cached
except for its last token (prompt length - 1 a multiple of the block size, the blocks cached)
to ``1 + K`` tokens, with K placeholder drafts, and counts that prefill as one drafted step that
accepted 0 (``v1/core/sched/scheduler.py``: the padding of new decode requests, and the
spec-decoding statistics of every scheduled draft). No draft was proposed: it is not a step of
speculative decoding. :func:`placeholder_step` recognises it from vLLM's per-step detail
(``--per-request-spec-decode-metrics detailed``): the first entry is 0 and every entry plus one
equals the token-carrying chunk at its place, the prefill's lone-token chunk included (the last
chunk may be shorter: drafts accepted past ``max_tokens``). :func:`record_steps` removes it (one
drafted step, its K drafted tokens, one ``h_0``) and counts it in ``placeholder_steps``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speedbench import engines
from speedbench.records import MAX_TOKENS_REASONS

# The names used in results, the report and the board for the two figures.
AL_DRAFTED = "acceptance_length_drafted"  # 1 + accepted / drafted steps
TOKENS_PER_DECODE_STEP = "tokens_per_decode_step"  # (output tokens - 1) / decode steps


def derive_decode_steps(output_tokens: int, accepted_tokens: int, drafted_steps: int | None,
                        chunk_steps: int = 0) -> tuple[int, int]:
    """``(decode_steps, accepted_past_max_tokens)`` from a request's output length and the engine's counts.

    ``T - 1 - A`` decode steps would have emitted the output if every accepted draft was emitted;
    drafts accepted past ``max_tokens`` make that too small, and the drafted steps are a lower
    bound of the decode steps, and so are the token-carrying chunks after the prefill's when
    chunks are steps (``chunk_steps``: a chunk may merge steps, never split one), so
    ``D = max(S_drafted, T - 1 - A, chunk_steps)`` and ``P = D + A - (T - 1)``. Exact whenever
    every decode step drafts (draft-model speculation: vLLM's 12 steps, 36 accepted, 48 tokens
    give D = 12, P = 1) or no chunk was merged; with partial drafting (n-gram), a cut last step
    and merged chunks it can undercount D by the drafts cut, at most K.
    """
    emitted_after_prefill = max(0, int(output_tokens) - 1)
    accepted = max(0, int(accepted_tokens))
    decode = max(0, emitted_after_prefill - accepted)
    if drafted_steps is not None:
        decode = max(decode, int(drafted_steps))
    decode = max(decode, int(chunk_steps))
    past = max(0, decode + accepted - emitted_after_prefill)
    return decode, past


@dataclass(frozen=True)
class StepCounts:
    """One request's counts under the step definitions above (None: the source does not say)."""

    decode_steps: int
    drafted_steps: int | None
    drafted_tokens: int | None
    accepted_tokens: int
    accepted_past_max_tokens: int
    output_tokens: int
    acceptance_histogram: list[int] | None = None  # h_0..h_K over drafted steps, placeholder removed
    placeholder_steps: int = 0  # vLLM prefix-cache placeholder steps removed (0 or 1)

    @property
    def decode_tokens(self) -> int:
        """Tokens emitted by the decode steps (the prefill's token excluded)."""
        return max(0, self.output_tokens - 1)


def placeholder_step(record) -> bool:
    """Whether the record's first drafted step is vLLM's prefix-cache placeholder (module doc)."""
    stats = record.engine_stats
    raw = stats.raw if stats is not None and isinstance(stats.raw, dict) else {}
    per_step = raw.get("per_step_accepted")
    if not (isinstance(per_step, list) and per_step and all(type(a) is int and a >= 0 for a in per_step)):
        return False
    chunks = [t for t in record.chunk_tokens if t > 0]
    if per_step[0] != 0 or len(per_step) != len(chunks) or (chunks and chunks[0] != 1):
        return False
    sizes = [a + 1 for a in per_step]
    return sizes[:-1] == chunks[:-1] and 1 <= chunks[-1] <= sizes[-1]


def _without_placeholder(stats, k: int | None) -> tuple[int | None, int | None, list[int] | None]:
    """(drafted steps, drafted tokens, histogram) of ``stats`` less one placeholder step of K drafts."""
    drafted_steps = stats.drafted_steps if stats.drafted_steps is not None else stats.verify_steps
    histogram = list(stats.acceptance_histogram) if stats.acceptance_histogram else None
    if histogram and histogram[0] > 0:
        histogram[0] -= 1
    drafted_tokens = stats.draft_tokens
    if drafted_tokens is not None and k:
        drafted_tokens = max(0, drafted_tokens - k)
    return (None if drafted_steps is None else max(0, drafted_steps - 1)), drafted_tokens, histogram


def _verify_steps_are_decode_steps(source: str | None) -> bool:
    spec = engines.of_source(source)
    return spec is not None and spec.verify_steps_are_decode_steps


def record_steps(record) -> StepCounts | None:
    """The engine's per-request counts of a ``TurnRecord`` (None without exact statistics).

    Uses ``decode_steps`` / ``drafted_steps`` when the record has them; records written before
    they existed are read by engine: ``verify_steps`` is drafted steps for vLLM / SGLang /
    TensorRT-LLM statistics and decode steps for llama.cpp's. When chunks are steps, the decode
    steps are at least the chunks after the prefill's (the identity alone undercounts a cut
    last step under partial drafting).
    """
    stats = record.engine_stats
    if stats is None or stats.accepted_tokens is None or not stats.exact:
        return None
    if placeholder_step(record):
        k = stats.draft_length or (stats.raw or {}).get("num_spec_tokens")
        drafted_steps, drafted_tokens, histogram = _without_placeholder(stats, k)
        chunk_steps = sum(1 for t in record.chunk_tokens[1:] if t > 0)
        decode, past = derive_decode_steps(record.output_tokens, stats.accepted_tokens, drafted_steps, chunk_steps)
        return StepCounts(decode_steps=decode, drafted_steps=drafted_steps, drafted_tokens=drafted_tokens,
                          accepted_tokens=int(stats.accepted_tokens), accepted_past_max_tokens=past,
                          output_tokens=int(record.output_tokens), acceptance_histogram=histogram,
                          placeholder_steps=1)
    drafted_steps = stats.drafted_steps
    if drafted_steps is None and stats.decode_steps is None and stats.verify_steps is not None:
        if not _verify_steps_are_decode_steps(stats.source):
            drafted_steps = stats.verify_steps
    if drafted_steps is None and stats.acceptance_histogram:
        drafted_steps = int(sum(stats.acceptance_histogram))
    if stats.decode_steps is None and drafted_steps is None and stats.verify_steps is None:
        return None
    # Chunks may merge steps but never split one: their count is a lower bound too, and it
    # recovers the steps that drafts accepted past max_tokens hide from the identity (a real
    # vLLM n-gram request: 36 chunks after the prefill's, 33 steps by the identity).
    chunk_steps = sum(1 for t in record.chunk_tokens[1:] if t > 0) if record.chunks_are_steps else 0
    decode, past = derive_decode_steps(record.output_tokens, stats.accepted_tokens, drafted_steps, chunk_steps)
    if stats.decode_steps is not None and int(stats.decode_steps) > decode:
        decode = int(stats.decode_steps)
        past = max(0, decode + int(stats.accepted_tokens) - max(0, int(record.output_tokens) - 1))
    return StepCounts(decode_steps=decode, drafted_steps=drafted_steps, drafted_tokens=stats.draft_tokens,
                      accepted_tokens=int(stats.accepted_tokens), accepted_past_max_tokens=past,
                      output_tokens=int(record.output_tokens),
                      acceptance_histogram=list(stats.acceptance_histogram) if stats.acceptance_histogram else None)


def per_step_arrays(record) -> tuple[list[int], list[int]] | None:
    """The engine's ordered per-step ``(drafted, accepted)`` counts of a record (vLLM's ``per_step_drafted``
    / ``per_step_accepted`` with ``--per-request-spec-decode-metrics detailed``), the prefix-cache
    placeholder step removed; None when the engine sent none or they contradict each other."""
    stats = record.engine_stats
    raw = stats.raw if stats is not None and isinstance(stats.raw, dict) else {}
    drafted, accepted = raw.get("per_step_drafted"), raw.get("per_step_accepted")
    if not (isinstance(drafted, list) and isinstance(accepted, list) and len(drafted) == len(accepted)):
        return None
    if not all(type(d) is int and type(a) is int and 0 <= a <= d for d, a in zip(drafted, accepted)):
        return None
    if placeholder_step(record):
        drafted, accepted = drafted[1:], accepted[1:]
    return list(drafted), list(accepted)


def budget_per_step_arrays(record, draft_length: int | None) -> tuple[list[int], list[int]] | None:
    """Per-step ``(drafted, accepted)`` counts rebuilt from the stream, for an engine whose steps draft
    ``D_j = min(K, B_j - 1)`` tokens (its spec's ``drafts_fit_the_budget``: llama.cpp), ``B_j`` the tokens
    the request may still emit before step ``j``: step ``j`` is the ``j``-th token-carrying chunk after
    the prefill's lone token and accepted ``t_j - 1``. The budget is the output length when
    ``max_tokens`` ended the request, else unbounded (every step drafts K).

    None unless the rebuilt counts add up to the engine's own drafted and accepted totals, so a draft
    ended early for any other reason (llama.cpp's ``draft p_min``, the context) leaves them unknown."""
    stats = record.engine_stats
    spec = engines.of_source(getattr(stats, "source", None))
    if not draft_length or spec is None or not spec.drafts_fit_the_budget or not record.chunks_are_steps:
        return None
    if stats.draft_tokens is None or stats.accepted_tokens is None:
        return None
    chunks = [int(t) for t in record.chunk_tokens or () if t > 0]
    if len(chunks) < 2 or chunks[0] != 1:
        return None
    budget = record.output_tokens if (record.finish_reason or "").lower() in MAX_TOKENS_REASONS else None
    k, emitted, drafted = int(draft_length), 1, []
    for tokens in chunks[1:]:
        drafted.append(k if budget is None else max(0, min(k, int(budget) - emitted - 1)))
        emitted += tokens
    accepted = [t - 1 for t in chunks[1:]]
    if sum(drafted) != int(stats.draft_tokens) or sum(accepted) != int(stats.accepted_tokens) \
            or any(a > d for d, a in zip(drafted, accepted)):
        return None
    return drafted, accepted


def tokens_per_decode_step(decode_tokens, decode_steps) -> np.ndarray:
    """``(T - 1) / D`` summed over requests; NaN where there are no decode steps."""
    t = np.asarray(decode_tokens, dtype=np.float64)
    d = np.asarray(decode_steps, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return t / d


__all__ = ["AL_DRAFTED", "TOKENS_PER_DECODE_STEP", "StepCounts", "budget_per_step_arrays", "derive_decode_steps",
           "per_step_arrays",
           "placeholder_step", "record_steps", "tokens_per_decode_step"]
