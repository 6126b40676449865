"""One worker's share of a phase, run inside one event loop under the phase's load shape.

``run_phase`` builds the adapter, tokenizer, connection pool and record writer once, then lets the
load shape (``speedbench.client.load.shapes``) decide when each conversation starts;
``run_conversation`` runs one conversation's turns, whatever the shape.

The measurement clock of a request starts at its *scheduled* send time: the common start for
a slot's first request, the end of the slot's previous request afterwards, the arrival time in
the open loop, the end of the previous turn for later turns of a conversation. Time the client
itself needs before the request really leaves (scheduling, tokenizing, JSON) therefore counts
against TTFT instead of vanishing, which is how a lagging client shows up in its own numbers.

Turns of a multi-turn row run in order, each with the model's own previous answers in the
history, as the exact ids the engine streamed where it did (``workload.encode_turn_exact``). A failed turn ends its conversation: the turns after it get records with
``error_kind = "skipped_after_error"`` so that nothing is silently missing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp

from speedbench.client.engines import get_adapter
from speedbench.client.data.workload import Conversation, encode_turn_exact, prompt_sha256
from speedbench.client.execution.phase import (
    ClientSettings,
    ErrorBudgetExceeded,
    ErrorCounter,
    PhaseSpec,
    record_key,
)
from speedbench.client.execution.loop_lag import LoopLagMonitor
from speedbench.client.execution.stream import stream_request
from speedbench.client.load.shapes import load_shape_for
from speedbench.client.recording.writer import RecordWriter
from speedbench.records import IDS_FROM_ENGINE, IDS_REENCODED, STREAM_FIELDS, TurnRecord


def output_ids(result, tokenizer) -> tuple[list[int] | None, str | None]:
    """A finished request's output ids and their origin: the engine's when it streamed them whole,
    else the text encoded with the target tokenizer (no special tokens), None for a failure."""
    if result.error is not None:
        return None, None
    if result.output_token_ids is not None:
        return result.output_token_ids, IDS_FROM_ENGINE
    return tokenizer.encode(result.output_text), IDS_REENCODED


@dataclass
class _PhaseContext:
    """What every conversation of one worker's phase shares."""

    settings: ClientSettings
    phase: PhaseSpec
    worker: int
    adapter: Any
    tokenizer: Any
    writer: RecordWriter
    errors: ErrorCounter
    on_record: Callable[[TurnRecord], None] | None
    session: aiohttp.ClientSession | None = None
    budget_hit: list[str] = field(default_factory=list)
    loop_lag: LoopLagMonitor | None = None  # the client's own lag, stamped on each record


def _base_fields(ctx: _PhaseContext, conversation: Conversation, turn_index: int, key: str) -> dict[str, Any]:
    phase = ctx.phase
    return dict(
        record_key=key, run_point=phase.run_point, load_shape=phase.load_shape,
        requested_concurrency=phase.requested_concurrency, request_rate=phase.request_rate,
        question_id=conversation.question_id, category=conversation.category,
        sub_category=conversation.sub_category, turn_index=turn_index,
        num_turns=len(conversation.turns), warmup=phase.warmup, worker=ctx.worker,
        supersedes=phase.supersedes.get(key, 0))


def _turn_record(ctx: _PhaseContext, conversation: Conversation, turn_index: int, key: str, prompt_ids: list[int],
                 scheduled_ns: int, started_unix: float, result) -> TurnRecord:
    record = TurnRecord(
        **_base_fields(ctx, conversation, turn_index, key),
        **{name: getattr(result, name) for name in STREAM_FIELDS},  # what the stream produced
        prompt_tokens=len(prompt_ids), prompt_sha256=prompt_sha256(prompt_ids), scheduled_ns=scheduled_ns,
        started_unix_s=started_unix, chunks_are_steps=ctx.adapter.chunks_are_steps,
        client_loop_lag_ns=ctx.loop_lag.max_lag_ns(result.send_ns, result.end_ns) if ctx.loop_lag else None)
    record.output_token_ids, record.output_token_ids_source = output_ids(result, ctx.tokenizer)
    return record


def _write_skipped_after(ctx: _PhaseContext, conversation: Conversation, failed_at: str) -> None:
    """Later turns cannot run without the failed turn's answer: record that, once."""
    failed_index = int(failed_at.rsplit("/", 1)[1])
    for turn_index in range(len(conversation.turns)):
        key = record_key(ctx.phase.run_point, conversation.question_id, turn_index, ctx.phase.warmup)
        if key in ctx.phase.done or turn_index <= failed_index:
            continue
        now = time.perf_counter_ns()
        ctx.writer.write(TurnRecord(
            **_base_fields(ctx, conversation, turn_index, key), prompt_tokens=0,
            prompt_sha256="", scheduled_ns=now, send_ns=now, end_ns=now, started_unix_s=time.time(),
            error=f"turn {failed_at} failed", error_kind="skipped_after_error"))


def _count_error(ctx: _PhaseContext, result) -> None:
    count = ctx.errors.add()
    if count > ctx.settings.max_errors:
        ctx.budget_hit.append(f"{count} errors exceed the error budget (--max-errors "
                              f"{ctx.settings.max_errors}); last: {result.error_kind}: {result.error}")


async def run_conversation(ctx: _PhaseContext, conversation: Conversation, scheduled_ns: int) -> int:
    """Run the conversation's missing turns; returns the end time (the slot frees then)."""
    phase, settings = ctx.phase, ctx.settings
    history: list[dict[str, str]] = []
    answer_ids: list[list[int] | None] = []  # per answer in history: the engine's ids, or None
    failed_at: str | None = None
    for turn_index, turn in enumerate(conversation.turns):
        key = record_key(phase.run_point, conversation.question_id, turn_index, phase.warmup)
        messages = history + [{"role": "user", "content": turn}]
        if key in phase.done:
            answer = phase.done[key]
            if answer is None:
                failed_at = key
                break
            history = messages + [{"role": "assistant", "content": answer}]
            answer_ids.append(phase.done_ids.get(key))  # resumed: its ids when the engine sent them
            continue
        if failed_at is not None or ctx.budget_hit:
            break
        if turn_index == 0 and conversation.first_prompt_ids:
            prompt_ids, answers = conversation.first_prompt_ids, None
        else:
            answers = encode_turn_exact(ctx.tokenizer, messages, settings.prompt_mode, answer_ids)
            prompt_ids = answers.ids
        started_unix = time.time()
        result = await stream_request(ctx.session, ctx.adapter, ctx.adapter.build_payload(prompt_ids),
                                      settings.request_timeout_s, settings.read_timeout_s)
        record = _turn_record(ctx, conversation, turn_index, key, prompt_ids, scheduled_ns, started_unix, result)
        if answers is not None and turn_index:  # how the earlier answers entered (counted per later turn)
            record.prompt_answers_spliced = answers.spliced_answers
            record.prompt_answers_as_text = answers.reencoded_answers
            record.prompt_answers_mismatched = answers.mismatched_answers
        ctx.writer.write(record)
        if ctx.on_record:
            ctx.on_record(record)
        scheduled_ns = result.end_ns
        if result.error is not None:
            failed_at = key
            _count_error(ctx, result)
            break
        history = messages + [{"role": "assistant", "content": result.output_text}]
        answer_ids.append(record.output_token_ids if record.output_token_ids_source == IDS_FROM_ENGINE else None)
    if failed_at is not None:
        _write_skipped_after(ctx, conversation, failed_at)
    return scheduled_ns


async def run_phase(settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation], worker: int,
                    errors: ErrorCounter, on_record: Callable[[TurnRecord], None] | None = None) -> int:
    """Run this worker's conversations under the phase's load shape; returns records written."""
    from speedbench.tokenization.target import load_tokenizer

    adapter = get_adapter(settings.engine)(settings.url, settings.sampling, settings.model,
                                           settings.extra_body, api=settings.api)
    # Always loaded: multi-turn prompts need it, and so does re-encoding an answer whose ids the
    # engine did not send (TurnRecord.output_token_ids_source "reencoded").
    tokenizer = load_tokenizer(settings.tokenizer, chat_template_kwargs=settings.chat_template_kwargs)
    shape = load_shape_for(phase)
    connector = aiohttp.TCPConnector(limit=shape.in_flight_limit, limit_per_host=shape.in_flight_limit,
                                     ttl_dns_cache=None, enable_cleanup_closed=True)
    ctx = _PhaseContext(settings, phase, worker, adapter, tokenizer, RecordWriter(settings.records_path), errors,
                        on_record)
    written_before = ctx.writer.written
    try:
        async with aiohttp.ClientSession(connector=connector, read_bufsize=1 << 21,
                                         timeout=aiohttp.ClientTimeout(total=None)) as session:
            ctx.session = session
            ctx.loop_lag = LoopLagMonitor()
            ctx.loop_lag.start()

            async def run_one(conversation: Conversation, scheduled_ns: int) -> int:
                return await run_conversation(ctx, conversation, scheduled_ns)

            try:
                await shape.drive(conversations, phase.start_ns, run_one, lambda: bool(ctx.budget_hit))
            finally:
                await ctx.loop_lag.stop()
    finally:
        ctx.writer.close()
    if ctx.budget_hit:
        raise ErrorBudgetExceeded(ctx.budget_hit[0])
    return ctx.writer.written - written_before
