"""Internal consistency of measured records: the rules a record must satisfy to be believed.

One code path for the measurement client's own checks and the leaderboard's validator: pure
functions over :class:`speedbench.records.TurnRecord` returning named :class:`Violation` s
(rule id, request, field, what is wrong). Nothing here raises on bad data, imports the client,
the dataset builder or Gradio, or decides what to do with a violation: the client reports them,
the board rejects the bundle.

Record rules (``check_record``; ``draft_length`` K, 0 for an autoregressive baseline):

- ``time.order``: ``scheduled_ns <= send_ns <= chunk_ns[0] <= ... <= chunk_ns[-1] <= end_ns``;
- ``bounds.*``: per-request physical bounds (:class:`PhysicalBounds`, documented there);
  ``bounds.user_tps`` counts from the request's send, not from its first chunk: chunks delivered
  in a burst (a busy client or server frontend, :mod:`speedbench.metrics.client_timing`) share a
  few stamps, which says nothing about the engine, but every token was made after the send;
- ``chunks.lengths`` / ``chunks.sum``: one token count per chunk time; the chunks add up to
  ``output_tokens`` (within ``chunk_sum_tolerance``: an engine may count an end-of-sequence
  token in its usage that it never streams);
- ``chunks.step_size``: when chunks are steps and the engine's own counts leave no room for
  merging (its decode steps equal the token chunks after the prefill's), no chunk carries more
  than K + 1 tokens (the first may also hold the prefill's token: K + 2); so too for llama.cpp,
  whose chunks are grouped by the step each event names, and for records without engine counts
  (nothing shows such a chunk holds several steps). A larger chunk the engine's counts can hold
  is several steps merged (the vLLM frontend does so): the acceptance figures count and exclude
  it as merged, and it is no violation;
- ``stats.k_mismatch``: the engine's K equals the submitted K;
- ``stats.histogram_width``: no histogram bin above K (bins h_0..h_K);
- ``stats.histogram_counts``: the histogram's steps and accepted tokens equal the counts;
- ``stats.accepted_exceeds_drafted``: accepted <= drafted tokens;
- ``stats.drafted_vs_steps``: drafted steps <= drafted tokens <= drafted steps x K (equality
  for draft-model / EAGLE drafting; n-gram and llama.cpp may propose fewer than K); a draft
  tree proposes its nodes per verify (``draft_nodes``, SGLang top-k > 1), so the bound is steps
  x nodes there while K, its depth, still bounds what one verify accepts;
- ``stats.steps_vs_output``: ``output_tokens = 1 + decode_steps + accepted - accepted_past_max_tokens``
  with ``0 <= accepted_past_max_tokens <= K`` (engines count drafts accepted on a last step
  that ``max_tokens`` cut); without decode steps, ``1 + drafted_steps + accepted <= output + K``;
- ``stats.per_step_counts``: the engine's per-step arrays (vLLM ``per_step_drafted`` /
  ``per_step_accepted``), when sent, hold one entry per drafted step, add up to the drafted and
  accepted tokens, and each step accepted at most what it drafted, at most K (K may vary per step);
- ``stats.chunks_disagree``: when chunks are steps, there are no more chunk steps than decode
  steps + 1 (chunks may merge steps, never split one);
- ``baseline.drafted``: a baseline (K = 0) carries no drafted or accepted tokens, and when its
  chunks are steps none carries more than one token.

Run rules (``check_coverage``, ``check_prompt_lengths``, ``check_acceptance_plausible``,
``check_client_lag``): each load point answers at least ``min_answered`` of the config's prompts,
each category at least ``min_category_answered`` of its prompts (``check_category_coverage``),
at most ``max_error_share`` of the measured requests failed, every turn of a multi-turn prompt is
there, prompt token counts fit the throughput bucket, the step sizes are not all K + 1, and at most
``MAX_CLIENT_LAGGED_SHARE`` of a point's requests are client-lagged.
"""
from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from speedbench import engines
from speedbench.metrics.client_timing import MAX_CLIENT_LAGGED_SHARE, MAX_USER_TPS, client_lagged
from speedbench.metrics.acceptance.steps import record_steps


@dataclass(frozen=True)
class Violation:
    """One broken rule: which, on which request (``record_key``), in which field, and how."""

    rule: str
    request: str
    field: str
    detail: str

    def __str__(self) -> str:
        return f"request {self.request!r}: field {self.field}: {self.detail} [rule {self.rule}]"


@dataclass(frozen=True)
class PhysicalBounds:
    """Per-request figures no real measurement reaches (generous: they catch fabrication, not outliers).

    - ``max_output_tokens`` / ``max_prompt_tokens``: 262,144, past the longest context any served
      model has today;
    - ``max_request_s``: 4 hours from scheduling to the end of the stream (the client's request
      timeout is 1 hour);
    - ``max_user_tps``: 20,000 tokens/s for one request, its tokens after the first counted
      from its send to its last chunk (the fastest served decode is a few thousand tokens/s per
      user), with K + 1 tokens of slack for the last step;
    - ``max_turns``: 16 turns per prompt (SPEED-Bench's multi-turn rows have 2-5);
    - ``chunk_sum_tolerance``: 1 token (see ``chunks.sum``).
    """

    max_output_tokens: int = 262_144
    max_prompt_tokens: int = 262_144
    max_request_s: float = 4 * 3600.0
    max_user_tps: float = MAX_USER_TPS
    max_turns: int = 16
    chunk_sum_tolerance: int = 1


DEFAULT_BOUNDS = PhysicalBounds()


# A throughput bucket's prompts are cut to the bucket in o200k tokens; the target tokenizer and
# its chat template may count differently, but not by a factor of two.
ISL_RATIO_RANGE = (0.5, 2.0)


def _time_order(r, v: list[Violation]) -> None:
    key = r.record_key
    if r.send_ns < r.scheduled_ns:
        v.append(Violation("time.order", key, "send_ns", "sent before it was scheduled"))
    times = list(r.chunk_ns)
    if times and times[0] < r.send_ns:
        v.append(Violation("time.order", key, "chunk_ns[0]", "first chunk arrives before the request was sent"))
    in_order = all(map(operator.le, times, times[1:]))  # in C: records have thousands of chunks
    back = None if in_order else next(i for i in range(1, len(times)) if times[i] < times[i - 1])
    if back is not None:
        v.append(Violation("time.order", key, f"chunk_ns[{back}]", "chunk times go backwards"))
    if r.end_ns < (times[-1] if times else r.send_ns):
        v.append(Violation("time.order", key, "end_ns", "stream ends before its last chunk (or before it was sent)"))


def _bounds(r, k: int, b: PhysicalBounds, v: list[Violation]) -> None:
    key = r.record_key
    if r.output_tokens > b.max_output_tokens:
        v.append(Violation("bounds.output_tokens", key, "output_tokens", f"{r.output_tokens} > {b.max_output_tokens}"))
    if not 1 <= r.prompt_tokens <= b.max_prompt_tokens:
        v.append(Violation("bounds.prompt_tokens", key, "prompt_tokens",
                           f"{r.prompt_tokens} outside 1..{b.max_prompt_tokens}"))
    if (r.end_ns - r.scheduled_ns) / 1e9 > b.max_request_s:
        v.append(Violation("bounds.duration", key, "end_ns", f"request lasts more than {b.max_request_s:.0f} s"))
    if not 1 <= r.num_turns <= b.max_turns or not 0 <= r.turn_index < r.num_turns:
        v.append(Violation("bounds.turns", key, "turn_index", f"turn {r.turn_index} of {r.num_turns} "
                           f"(at most {b.max_turns} turns per prompt)"))
    tokens, times = list(r.chunk_tokens), list(r.chunk_ns)
    if len(times) >= 2:
        # From the send: chunk stamps may be squeezed together by their delivery, the send may not.
        span_s = (times[-1] - r.send_ns) / 1e9
        after_first = sum(tokens[1:])
        if after_first > b.max_user_tps * span_s + k + 1:
            v.append(Violation("bounds.user_tps", key, "chunk_ns",
                               f"{after_first} tokens after the first within {span_s * 1e3:.6f} ms of the request's "
                               f"send: faster than {b.max_user_tps:.0f} tokens/s"))


def _chunks(r, k: int, b: PhysicalBounds, v: list[Violation]) -> None:
    key = r.record_key
    tokens = list(r.chunk_tokens)
    if len(tokens) != len(r.chunk_ns):
        v.append(Violation("chunks.lengths", key, "chunk_tokens", "chunk_tokens and chunk_ns differ in length"))
        return
    if tokens and min(tokens) < 0:
        v.append(Violation("chunks.negative", key, "chunk_tokens", "negative token count"))
        return
    total = sum(tokens)
    if abs(total - r.output_tokens) > b.chunk_sum_tolerance:
        v.append(Violation("chunks.sum", key, "output_tokens",
                           f"chunks add up to {total} tokens but output_tokens is {r.output_tokens}"))
    if r.chunks_are_steps and tokens and (tokens[0] > k + 2 or max(tokens) > k + 1):
        big = next((i for i, t in enumerate(tokens) if t > (k + 2 if i == 0 else k + 1)), None)
        if big is None:
            return
        if k == 0:
            v.append(Violation("baseline.drafted", key, f"chunk_tokens[{big}]",
                               f"{tokens[big]} tokens in one step; at most K + 1 = {k + 1}"))
            return
        steps = record_steps(r)
        chunk_steps = sum(1 for t in tokens[1:] if t > 0)
        if r.engine_stats is not None and _spec_says(r.engine_stats.source, "chunks_are_engine_steps"):
            # llama.cpp's events carry their step (timings_per_token): one chunk is one step, never merged
            v.append(Violation("chunks.step_size", key, f"chunk_tokens[{big}]",
                               f"{tokens[big]} tokens in one llama.cpp step; at most K + 1 = {k + 1}"))
        elif steps is None:  # nothing tells a merged chunk from an impossible step: not believed
            v.append(Violation("chunks.step_size", key, f"chunk_tokens[{big}]",
                               f"{tokens[big]} tokens in one chunk, over K + 1 = {k + 1}, and no engine counts to "
                               "show it holds several steps"))
        elif steps.decode_steps == chunk_steps:  # one step per chunk: none merged
            v.append(Violation("chunks.step_size", key, f"chunk_tokens[{big}]",
                               f"{tokens[big]} tokens in one chunk, and the engine counted one decode step per "
                               f"chunk ({steps.decode_steps}), so in one step; at most K + 1 = {k + 1}"))


def _spec_says(source: str | None, rule: str) -> bool:
    """Whether the engine whose statistics carry ``source`` has the spec property ``rule``."""
    spec = engines.of_source(source)
    return spec is not None and getattr(spec, rule)


def _get(stats, name: str):
    return getattr(stats, name, None)


def _stats(r, k: int, v: list[Violation], nodes: int | None = None) -> None:
    s, key = r.engine_stats, r.record_key
    if s is None:
        return
    accepted, drafted = _get(s, "accepted_tokens"), _get(s, "draft_tokens")
    if k == 0:
        if accepted or drafted or _get(s, "drafted_steps"):
            v.append(Violation("baseline.drafted", key, "engine_stats",
                               f"a baseline run drafted {drafted or 0} and accepted {accepted or 0} tokens"))
        return
    if s.draft_length is not None and s.draft_length != k:
        v.append(Violation("stats.k_mismatch", key, "engine_stats.draft_length",
                           f"engine says K = {s.draft_length}, the submission says K = {k}"))
    hist = s.acceptance_histogram
    if hist and any(hist[k + 1:]):
        v.append(Violation("stats.histogram_width", key, "engine_stats.acceptance_histogram",
                           f"{len(hist)} bins with counts past h_{k} (K = {k} allows h_0..h_{k})"))
        return
    if not s.exact:
        return  # a rounded proxy (TensorRT-LLM's average) is not held to the identities
    drafted_steps = _get(s, "drafted_steps")
    decode_steps = _get(s, "decode_steps")
    if drafted_steps is None and decode_steps is None and not _spec_says(s.source, "verify_steps_are_decode_steps"):
        drafted_steps = s.verify_steps  # format-1 records: verify_steps are drafted steps
    if decode_steps is None and _spec_says(s.source, "verify_steps_are_decode_steps"):
        decode_steps = s.verify_steps
    if hist:
        if drafted_steps is not None and sum(hist) != drafted_steps:
            v.append(Violation("stats.histogram_counts", key, "engine_stats.acceptance_histogram",
                               f"histogram holds {sum(hist)} steps, the engine counted {drafted_steps}"))
        if accepted is not None and sum(j * h for j, h in enumerate(hist)) != accepted:
            v.append(Violation("stats.histogram_counts", key, "engine_stats.acceptance_histogram",
                               f"histogram accepts {sum(j * h for j, h in enumerate(hist))} tokens, "
                               f"accepted_tokens is {accepted}"))
    if accepted is not None and drafted is not None and accepted > drafted:
        v.append(Violation("stats.accepted_exceeds_drafted", key, "engine_stats.accepted_tokens",
                           f"{accepted} accepted of {drafted} drafted"))
    steps = drafted_steps if drafted_steps is not None else decode_steps
    per_step, tree = (nodes, f" (a tree of {nodes} nodes)") if nodes else (k, "")
    if steps is not None and drafted is not None and (drafted > steps * per_step
                                                      or (drafted_steps and drafted < drafted_steps)):
        v.append(Violation("stats.drafted_vs_steps", key, "engine_stats.draft_tokens",
                           f"{drafted} drafted tokens over {steps} drafted steps with K = {k}{tree}"))
    if steps is not None and accepted is not None and accepted > steps * k:
        v.append(Violation("stats.accepted_exceeds_drafted", key, "engine_stats.accepted_tokens",
                           f"{accepted} accepted over {steps} steps with K = {k} (at most {steps * k})"))
    if accepted is not None:
        _identity(r, k, decode_steps, drafted_steps, accepted, v)
    _per_step(r, k, drafted_steps, drafted, accepted, v)


def _per_step(r, k: int, drafted_steps, drafted, accepted, v: list[Violation]) -> None:
    raw = r.engine_stats.raw if isinstance(r.engine_stats.raw, dict) else {}
    d, a = raw.get("per_step_drafted"), raw.get("per_step_accepted")
    if d is None and a is None:
        return
    key, name = r.record_key, "engine_stats.raw.per_step_drafted"
    if not (isinstance(d, list) and isinstance(a, list) and len(d) == len(a)
            and all(type(x) is int for x in d + a)):
        v.append(Violation("stats.per_step_counts", key, name, "per-step drafted and accepted counts are not two "
                           "lists of whole numbers of one length"))
        return
    bad = next((i for i, (x, y) in enumerate(zip(d, a)) if not 0 <= y <= x <= k), None)
    if bad is not None:
        v.append(Violation("stats.per_step_counts", key, name, f"step {bad} drafted {d[bad]} and accepted {a[bad]} "
                           f"(0 <= accepted <= drafted <= K = {k})"))
    for what, steps_or_sum, expected in (("steps", len(d), drafted_steps), ("drafted tokens", sum(d), drafted),
                                         ("accepted tokens", sum(a), accepted)):
        if expected is not None and steps_or_sum != expected:
            v.append(Violation("stats.per_step_counts", key, name,
                               f"per-step counts hold {steps_or_sum} {what}, the engine counted {expected}"))


def _identity(r, k: int, decode_steps, drafted_steps, accepted: int, v: list[Violation]) -> None:
    key, out = r.record_key, r.output_tokens
    if decode_steps is not None:
        past = 1 + decode_steps + accepted - out
        if not 0 <= past <= k:
            v.append(Violation("stats.steps_vs_output", key, "engine_stats.decode_steps",
                               f"1 + {decode_steps} steps + {accepted} accepted = {1 + decode_steps + accepted} "
                               f"tokens, output_tokens is {out} (at most K = {k} accepted past max_tokens)"))
        if r.chunks_are_steps:
            rest = list(r.chunk_tokens)[1:]
            chunk_steps = len(rest) - rest.count(0)
            if chunk_steps > decode_steps + 1:
                v.append(Violation("stats.chunks_disagree", key, "chunk_tokens",
                                   f"{chunk_steps} streamed steps but the engine counted {decode_steps} decode steps"))
    elif drafted_steps is not None and 1 + drafted_steps + accepted > out + k:
        v.append(Violation("stats.steps_vs_output", key, "engine_stats.accepted_tokens",
                           f"1 + {drafted_steps} steps + {accepted} accepted exceeds output_tokens {out} + K"))


def check_record(record, draft_length: int, bounds: PhysicalBounds = DEFAULT_BOUNDS,
                 draft_nodes: int | None = None) -> list[Violation]:
    """Every record rule (module docstring) on one successful request-turn; [] when it holds.
    ``draft_nodes``: the draft tree's nodes per verify when the run drafted a tree (None: a chain)."""
    violations: list[Violation] = []
    _time_order(record, violations)
    _chunks(record, draft_length, bounds, violations)
    _bounds(record, draft_length, bounds, violations)
    _stats(record, draft_length, violations, draft_nodes)
    return violations


def check_client_lag(records: Iterable, max_share: float = MAX_CLIENT_LAGGED_SHARE) -> list[Violation]:
    """``client.lag``: at some load point more than ``max_share`` of the successful measured requests
    are client-lagged (:mod:`speedbench.metrics.client_timing`): the client was too busy for that
    point's latency figures to stand for it. Below the share they are left out of the figures."""
    by_point: dict[str, list] = defaultdict(list)
    for r in records:
        if not r.warmup and r.ok:
            by_point[r.run_point].append(r)
    for point, mine in sorted(by_point.items()):
        lagged = [r for r in mine if client_lagged(r)]
        if len(lagged) > max_share * len(mine):
            return [Violation("client.lag", lagged[0].record_key, "chunk_ns",
                              f"{len(lagged)} of {len(mine)} requests at load point {point} reached the client in "
                              f"shared reads (at most {max_share:.0%} may): the client was too busy to time them; "
                              "measure again with the client on cores of its own")]
    return []


def check_prompt_lengths(records: Iterable, isl_tokens: int | None) -> list[Violation]:
    """``isl.bucket``: first-turn prompt lengths of a throughput run fit its ISL bucket (None: not a bucket)."""
    if not isl_tokens:
        return []
    low, high = ISL_RATIO_RANGE[0] * isl_tokens, ISL_RATIO_RANGE[1] * isl_tokens
    for r in records:
        if r.turn_index == 0 and not low <= r.prompt_tokens <= high:
            return [Violation("isl.bucket", r.record_key, "prompt_tokens",
                              f"{r.prompt_tokens} prompt tokens in a {isl_tokens}-token bucket "
                              f"(expected {low:.0f}..{high:.0f})")]
    return []


def check_acceptance_plausible(records: Iterable, draft_length: int, min_steps: int = 100) -> list[Violation]:
    """``acceptance.perfect``: every decode step of a speculative run accepted all K drafts.

    Judged from the chunks of records whose chunks are steps, the first and last chunk left out
    (the prefill's token, the cut last step); needs ``min_steps`` steps to judge."""
    steps = perfect = 0
    first = None
    for r in records:
        if not r.chunks_are_steps:
            continue
        middle = list(r.chunk_tokens)[1:-1]
        steps += len(middle)
        perfect += middle.count(draft_length + 1)
        first = first or r.record_key
    if draft_length and steps >= min_steps and perfect == steps:
        return [Violation("acceptance.perfect", first, "chunk_tokens",
                          f"all {steps} steps accepted all K = {draft_length} draft tokens")]
    return []
