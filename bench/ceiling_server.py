"""A streaming server that costs almost nothing per event, for measuring a client's own ceiling.

It speaks vLLM's OpenAI-compatible ``/v1/completions`` streaming format as recorded from a real
vLLM 0.32.0 (``../shared/wire/vllm-0.32.0-cpu/``): HTTP/1.1 keep-alive, ``Transfer-Encoding:
chunked``, one ``data: {...}\\n\\n`` event per HTTP chunk carrying ``text``, ``token_ids`` and
cumulative ``usage`` (``continuous_usage_stats``), a last token event with ``finish_reason``
``"length"``, a usage-only event with ``choices: []`` and ``system_fingerprint``, then
``data: [DONE]``. Request n gets ``events_for(n)`` one-token events whatever it asked for (``--events``
on average, varied by ``--spread`` so that requests started together do not end together), so
every client under test receives the same streams.

Cheap on purpose: a raw ``asyncio.Protocol`` (no HTTP framework), the bytes of every event
rendered once at start-up, per event only the response id (fixed width) and the send stamp
spliced in, and one ``transport.write``. Event k of a request leaves at ``arrival + ttft +
phase + k * step``, where ``phase`` (in ``[0, step)``, from the request number) spreads the
streams over the step, as requests of a real server are not in lock step; the event loop's
timers are millisecond-grained, so events due within the same millisecond leave together.

The send stamp (``time.monotonic_ns()``, CLOCK_MONOTONIC, the clock of ``time.perf_counter_ns``
in any process on the machine) is written into each event as ``"t_send_ns"`` (space-padded, so
every event of index k has the same length) and kept per response id; ``GET /ceiling/log``
returns ``{"rid": [...], "arrival_ns": [...], "send_ns": [[...], ...], "late_ns_p99": ...,
"cpu_s": ...}`` and clears the log.

    python bench/ceiling_server.py --port 0 --events 64 --step 0.01 --cpu 0
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

MODEL = "ceiling"
RID_WIDTH = 20  # "cmpl-ceil-" + 10 digits
STAMP_WIDTH = 20
PROMPT_TOKENS = 16  # the usage the events report (the client's prompt is not read)
_DONE = b"data: [DONE]\n\n"
_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
         b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def token_id(k: int) -> int:
    """The id of token k: spread over a 150k vocabulary, the size of current targets' (record bytes)."""
    return (7919 * k + 11) % 150_000


def render_events(max_events: int) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], list[bytes]]:
    """Per token event k (0-based): (bytes before the response id, bytes between id and stamp), with
    the HTTP chunk header folded in, once as a middle event and once as the last one (``finish_reason``
    ``"length"``); and per event count n the tail (usage event, ``[DONE]``, the last HTTP chunk)."""
    middle_events, last_events, tails = [], [], [b""]
    for k in range(max_events):
        for finish, into in ((b"null", middle_events), (b'"length"', last_events)):
            middle = (b'","object":"text_completion","created":1796109981,"model":"%s","choices":[{"index":0,'
                      b'"text":" w%d","logprobs":null,"finish_reason":%s,"stop_reason":null,'
                      b'"prompt_token_ids":null,"token_ids":[%d]}],"usage":{"prompt_tokens":%d,"total_tokens":%d,'
                      b'"completion_tokens":%d},"t_send_ns":'
                      % (MODEL.encode(), k % 400, finish, token_id(k), PROMPT_TOKENS, PROMPT_TOKENS + k + 1, k + 1))
            length = len(b'data: {"id":"') + RID_WIDTH + len(middle) + STAMP_WIDTH + len(b"}\n\n")
            into.append((b'%x\r\ndata: {"id":"' % length, middle))
        usage = (b'data: {"id":"cmpl-ceil","object":"text_completion","created":1796109981,"model":"%s",'
                 b'"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d},'
                 b'"system_fingerprint":"vllm-0.32.0-ceiling"}\n\n'
                 % (MODEL.encode(), PROMPT_TOKENS, PROMPT_TOKENS + k + 1, k + 1))
        tails.append(_chunk(usage) + _chunk(_DONE) + b"0\r\n\r\n")
    return middle_events, last_events, tails


def events_for(number: int, events: int, spread: float) -> int:
    """Token events of request ``number``: ``events`` times a factor spread evenly over
    ``[1 - spread, 1 + spread]`` (a low-discrepancy sequence: deterministic, no two alike in a row), so
    that requests started together do not all end together, as outputs of a real server differ."""
    factor = 1 + spread * (2 * ((number * 0.7548776662466927) % 1.0) - 1)
    return max(1, round(events * factor))


class Log:
    def __init__(self):
        self.rids: list[str] = []
        self.arrival_ns: list[int] = []
        self.send_ns: list[list[int]] = []
        self.late_ns: list[int] = []

    def dump(self) -> bytes:
        late = sorted(self.late_ns)
        p99 = late[min(len(late) - 1, int(0.99 * len(late)))] if late else 0
        body = json.dumps({"rid": self.rids, "arrival_ns": self.arrival_ns, "send_ns": self.send_ns,
                           "late_ns_p99": p99, "late_ns_max": late[-1] if late else 0,
                           "cpu_s": time.process_time(),
                           # time.time_ns() - time.monotonic_ns(): turns the send stamps into wall-clock
                           # times for clients that keep only those (guidellm)
                           "wall_minus_monotonic_ns": time.time_ns() - time.monotonic_ns()}).encode()
        self.__init__()
        return body


class Config:
    def __init__(self, events: int, step_s: float, ttft_s: float, spread: float):
        self.events, self.step_s, self.ttft_s, self.spread = events, step_s, ttft_s, spread
        self.middle, self.last, self.tails = render_events(round(events * (1 + spread)) + 1)
        self.requests = 0
        self.log = Log()


def _plain(status: str, body: bytes, content_type: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
            % (status.encode(), content_type, len(body), body))


class Stream:
    """One response in flight: event k is due at ``start_ns + k * step`` (monotonic ns)."""

    def __init__(self, protocol: "CeilingProtocol", config: Config, rid: bytes, start_ns: int, events: int):
        self.protocol, self.config, self.rid, self.start_ns, self.events = protocol, config, rid, start_ns, events
        self.step_ns = int(config.step_s * 1e9)
        self.k = 0
        self.stamps: list[int] = []
        self._arm()

    def _arm(self) -> None:
        delay = (self.start_ns + self.k * self.step_ns - time.monotonic_ns()) / 1e9
        self.protocol.loop.call_later(delay if delay > 0 else 0, self.send)

    def send(self) -> None:
        transport = self.protocol.transport
        if transport is None or transport.is_closing():
            return
        config = self.config
        due_ns = self.start_ns + self.k * self.step_ns
        head, middle = (config.last if self.k == self.events - 1 else config.middle)[self.k]
        now = time.monotonic_ns()
        transport.write(b"".join((head, self.rid, middle, b"%20d" % now, b"}\n\n\r\n")))
        self.stamps.append(now)
        config.log.late_ns.append(now - due_ns)
        self.k += 1
        if self.k < self.events:
            self._arm()
        else:
            transport.write(config.tails[self.events])
            self.protocol.finished()


class CeilingProtocol(asyncio.Protocol):
    def __init__(self, config: Config):
        self.config = config
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next_request()

    def finished(self) -> None:
        self.busy = False
        self._next_request()

    def _next_request(self) -> None:
        """Parse one whole request (head and Content-Length body) when idle; clients do not pipeline."""
        if self.busy:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = bytes(self.buffer[:end]).split(b"\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buffer) < end + 4 + length:
            return
        del self.buffer[:end + 4 + length]
        method, path = (lines[0].split(b" ") + [b"", b""])[:2]
        self._route(method, path.split(b"?")[0])

    def _route(self, method: bytes, path: bytes) -> None:
        transport, config = self.transport, self.config
        if method == b"POST" and path in (b"/v1/completions", b"/v1/chat/completions"):
            now = time.monotonic_ns()
            config.requests += 1
            number = config.requests
            rid = b"cmpl-ceil-%010d" % number
            phase = ((number * 0.6180339887498949) % 1.0) * config.step_s  # golden-ratio spread over a step
            config.log.rids.append(rid.decode())
            config.log.arrival_ns.append(now)
            self.busy = True
            transport.write(_HEAD)
            stream = Stream(self, config, rid, now + int((config.ttft_s + phase) * 1e9),
                            events_for(number, config.events, config.spread))
            config.log.send_ns.append(stream.stamps)
            return
        if path == b"/ceiling/log":
            transport.write(_plain("200 OK", config.log.dump()))
        elif path == b"/v1/models":
            transport.write(_plain("200 OK", json.dumps(
                {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm"}]}).encode()))
        elif path in (b"/health", b"/ping"):
            transport.write(_plain("200 OK", b""))
        elif path == b"/version":
            transport.write(_plain("200 OK", b'{"version":"0.32.0-ceiling"}'))
        else:
            transport.write(_plain("404 Not Found", b'{"error":"not found"}'))
        self._next_request()


async def serve(port: int, config: Config) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: CeilingProtocol(config), "127.0.0.1", port, backlog=4096)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--events", type=int, default=64, help="token events per request (mean)")
    parser.add_argument("--spread", type=float, default=0.5,
                        help="events per request vary over events x [1 - spread, 1 + spread] (0: all alike)")
    parser.add_argument("--step", type=float, required=True, help="seconds between a stream's events")
    parser.add_argument("--ttft", type=float, default=0.02)
    parser.add_argument("--cpu", type=int, default=None, help="pin to this core (os.sched_setaffinity)")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    config = Config(args.events, args.step, args.ttft, args.spread)
    try:
        import uvloop
        uvloop.run(serve(args.port, config))
    except ImportError:  # pragma: no cover
        asyncio.run(serve(args.port, config))


if __name__ == "__main__":
    sys.exit(main())
