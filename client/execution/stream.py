"""One streamed request: send the payload, stamp every event on arrival, turn failures into causes.

The clock is ``time.perf_counter_ns`` (CLOCK_MONOTONIC on Linux, shared by all worker
processes). Each event is stamped when the network read that completed its line returns, before
any line of that read is decoded, so JSON parsing never delays a timestamp. Every failure ends as
a ``StreamResult`` with ``error_kind``:

- ``timeout``: no byte for ``read_timeout_s`` or the whole request over ``request_timeout_s``;
- ``http_429`` / ``http_5xx`` / ``http_4xx``: the status and the start of the body;
- ``connection``: refused, reset, or the stream ended before ``[DONE]``;
- ``malformed``: an SSE line or JSON body that does not fit the engine's format;
- ``engine_error``: the engine streamed an error object.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import MISSING, field, fields, make_dataclass
from typing import Any

import aiohttp

import orjson  # a pinned dependency

from speedbench.client.engines.base import EngineAdapter, StreamError, StreamState
from speedbench.records import STREAM_FIELDS, TurnRecord

_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


def _stream_result_type() -> type:
    """``StreamResult``: the fields of ``TurnRecord`` a stream produces (``STREAM_FIELDS``), with the
    types and defaults ``TurnRecord`` declares, so the two never drift apart. ``output_token_ids``
    holds the engine's ids only when they add up to ``output_tokens``."""
    declared = {f.name: f for f in fields(TurnRecord)}
    spec = []
    for name in STREAM_FIELDS:
        f = declared[name]
        kwargs = ({"default": f.default} if f.default is not MISSING else
                  {"default_factory": f.default_factory} if f.default_factory is not MISSING else {})
        spec.append((name, f.type, field(**kwargs)))
    result = make_dataclass("StreamResult", spec)
    result.__module__ = __name__  # make_dataclass names its caller's module only from Python 3.12
    return result


StreamResult = _stream_result_type()


def engine_token_ids(state: StreamState, chunk_tokens: list[int]) -> list[int] | None:
    """The ids the engine streamed, if they are whole: as many as the chunks counted (so the
    chunk offsets of ``speedbench.records`` hold); None otherwise (the caller re-encodes)."""
    ids = state.token_ids
    if ids is None or state.token_ids_broken or len(ids) != sum(chunk_tokens):
        return None
    if not all(type(i) is int and i >= 0 for i in ids):  # one pass per request, not per chunk
        return None
    return ids


def _status_kind(status: int) -> str:
    if status == 429:
        return "http_429"
    if status >= 500:
        return "http_5xx"
    return "http_4xx"


async def stream_request(
    session: aiohttp.ClientSession,
    adapter: EngineAdapter,
    payload: dict[str, Any],
    request_timeout_s: float | None = None,
    read_timeout_s: float | None = None,
) -> StreamResult:
    """Send one request and read its stream to the end (never raises for request failures)."""
    body = orjson.dumps(payload)
    timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_read=read_timeout_s)
    attempts = 0
    while True:
        attempts += 1
        state = StreamState()
        chunk_ns: list[int] = []
        chunk_tokens: list[int] = []
        send_ns = time.perf_counter_ns()
        error_kind, error, got_response = await _stream_once(session, adapter, body, timeout, state, chunk_ns,
                                                             chunk_tokens)
        # A kept-alive connection the server had already closed fails before any response: the
        # request never reached the server, so one retry on a fresh connection is safe.
        if error_kind == "connection" and not got_response and attempts == 1:
            continue
        break
    end_ns = time.perf_counter_ns()
    usage_tokens = (state.usage or {}).get("completion_tokens")
    result = StreamResult(
        send_ns=send_ns,
        end_ns=end_ns,
        chunk_ns=chunk_ns,
        chunk_tokens=chunk_tokens,
        output_tokens=int(usage_tokens) if usage_tokens is not None else state.tokens_total,
        output_text=state.text,
        finish_reason=state.finish_reason if error is None else None,
        response_id=state.response_id,
        error=error,
        error_kind=error_kind,
    )
    if error is None:
        result.engine_stats = adapter.engine_stats(state)
        result.output_token_ids = engine_token_ids(state, chunk_tokens)
    result.attempts = attempts
    return result


# An SSE line this long without its newline is not an SSE stream (it would otherwise grow forever).
MAX_LINE_BYTES = 1 << 22


async def _stream_once(session, adapter, body, timeout, state, chunk_ns, chunk_tokens):
    """One attempt; returns (error_kind, error, whether a response status arrived)."""
    got_response = False
    error_kind = error = None
    try:
        headers = {**_JSON_HEADERS, **getattr(adapter, "extra_headers", {})}
        async with session.post(adapter.generate_url, data=body, headers=headers, timeout=timeout) as response:
            got_response = True
            if response.status != 200:
                text = (await response.text(errors="replace"))[:300]
                raise StreamError(_status_kind(response.status), f"HTTP {response.status}: {text}")
            content = response.content
            try:
                done = await _read_events(content, adapter, state, chunk_ns, chunk_tokens, timeout.sock_read)
            except asyncio.TimeoutError:
                framing = _framing_error(response)
                if framing is not None:
                    raise framing from None
                raise
            if done and not content.at_eof():
                # Read the (empty) rest of the body so the connection goes back to the pool
                # instead of being closed: a new TCP connect per request would queue at the server.
                await content.read()
            if not done and not adapter.stream_finished(state):
                raise StreamError("connection", "stream ended before [DONE] (connection closed mid-stream)")
    except StreamError as failure:
        error_kind, error = failure.kind, failure.message
    except asyncio.TimeoutError:
        error_kind, error = "timeout", (
            f"no response within the timeout (request {timeout.total}s, between events {timeout.sock_read}s)"
        )
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
            aiohttp.ClientConnectionError, ConnectionError) as failure:
        error_kind, error = "connection", f"{type(failure).__name__}: {failure}"
    except (aiohttp.ClientResponseError, KeyError, TypeError, ValueError) as failure:
        # A body the adapter could not read (wrong types, missing keys, a line over the buffer).
        error_kind, error = "malformed", f"{type(failure).__name__}: {failure}"
    return error_kind, error, got_response


def _framing_error(response) -> StreamError | None:
    """The HTTP framing error aiohttp's parser holds but never handed to the body's reader, if any.

    aiohttp (3.14) stops a response body silently when a chunk header after the first read is
    broken (a chunk size that is not hexadecimal): the parser keeps the error on the connection's
    protocol, the body's reader waits forever, and its own ``sock_read`` timer is gone with it
    (tests/faults: broken chunked framing). The read watchdog of ``_read_events`` ends the wait;
    this names the cause."""
    protocol = getattr(response.connection, "protocol", None)
    error = protocol.exception() if protocol is not None and hasattr(protocol, "exception") else None
    if not isinstance(error, aiohttp.http_exceptions.HttpProcessingError):  # a timeout is one too: not framing
        return None
    return StreamError("malformed", f"broken HTTP framing: {str(error)[:300]}")


async def _read_events(content, adapter, state: StreamState, chunk_ns: list[int], chunk_tokens: list[int],
                       read_timeout_s: float | None = None) -> bool:
    """Read the SSE body to ``[DONE]`` (True) or its end (False), filling the chunk lists.

    One await per network read (``readany``: whatever has arrived), not per line: every complete
    line in it is stamped with the time the read returned, before any of them is decoded; an
    unfinished last line waits for the next read (at the end of the body it is read as it is).
    A watchdog of our own raises ``asyncio.TimeoutError`` after ``read_timeout_s`` without a read,
    whatever aiohttp's timer does (``_framing_error``). It costs a read nothing but the stamp it
    already takes: one timer per request looks at the last read's stamp and re-arms itself for the
    rest of the interval (a timer moved at every read cost 5-11 us a read on this machine).
    """
    last = [time.perf_counter_ns()]
    if not read_timeout_s:
        return await _read_lines(content, adapter, state, chunk_ns, chunk_tokens, last)
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    limit_ns, fired = int(read_timeout_s * 1e9), []

    def check() -> None:
        idle = time.perf_counter_ns() - last[0]
        if idle >= limit_ns:
            fired.append(idle)
            task.cancel()
        else:
            timer[0] = loop.call_later((limit_ns - idle) / 1e9, check)

    timer = [loop.call_later(read_timeout_s, check)]
    try:
        return await _read_lines(content, adapter, state, chunk_ns, chunk_tokens, last)
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:  # ours, not a cancellation from outside (Ctrl-C)
            raise asyncio.TimeoutError() from None
        raise
    finally:
        timer[0].cancel()


async def _read_lines(content, adapter, state: StreamState, chunk_ns: list[int], chunk_tokens: list[int],
                      last: list[int]) -> bool:
    pending = b""
    last_key: list[Any] = [None]
    while True:
        data = await content.readany()
        now = last[0] = time.perf_counter_ns()
        if not data:  # end of the body
            return bool(pending) and _handle_lines(pending.splitlines(), now, adapter, state, chunk_ns,
                                                   chunk_tokens, last_key)
        if pending:
            data = pending + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) > MAX_LINE_BYTES:
                raise StreamError("malformed", f"an SSE line of over {MAX_LINE_BYTES} bytes: {data[:200]!r}")
            pending = data
            continue
        pending = data[cut:]
        if _handle_lines(data[:cut].splitlines(), now, adapter, state, chunk_ns, chunk_tokens, last_key):
            return True


def _handle_lines(lines, now: int, adapter, state: StreamState, chunk_ns: list[int], chunk_tokens: list[int],
                  last_key: list[Any]) -> bool:
    """Decode SSE lines that arrived at ``now``; True once ``data: [DONE]`` is seen."""
    parse_event = adapter.parse_event
    for line in lines:
        line = line.strip()
        if not line or line[:1] == b":":
            continue  # keep-alive blank line or SSE comment
        if line[:5] != b"data:":
            if line.split(b":", 1)[0] in (b"event", b"id", b"retry"):
                continue
            raise StreamError("malformed", f"not an SSE data line: {line[:200]!r}")
        data = line[5:].strip()
        if data == b"[DONE]":
            return True
        try:
            event = orjson.loads(data)
        except ValueError as decode_error:
            raise StreamError("malformed", f"invalid JSON in SSE event: {data[:200]!r} ({decode_error})")
        if type(event) is not dict:
            raise StreamError("malformed", f"SSE event is not a JSON object: {data[:200]!r}")
        new_tokens, step_key = parse_event(event, state)
        if new_tokens <= 0:
            continue
        if step_key is not None and step_key == last_key[0] and chunk_tokens:
            chunk_tokens[-1] += new_tokens  # same verification step: stamped at its first event
        else:
            chunk_ns.append(now)
            chunk_tokens.append(new_tokens)
        last_key[0] = step_key
    return False
