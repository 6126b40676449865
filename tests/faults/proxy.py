"""A fault-injecting HTTP proxy between ``speedbench run`` and a real engine server (tests only).

An asyncio TCP server on 127.0.0.1 in a thread of its own. Each client connection carries one
request: the proxy reads it, opens a fresh connection to the upstream server, forwards the request
with ``Connection: close`` and relays the response with ``Connection: close`` too, so the client
never reuses a connection and one connection is one request. The generation requests (POST) are
numbered 0, 1, 2, ... in arrival order; the fault plan maps such an index to a :class:`Fault`
(GETs, the client's description and counter scrapes, always pass untouched). The plan is a plain
dict: no randomness, nothing timed except the drip's pacing, which is the fault itself.

A chunked response (the engine's SSE stream) is parsed chunk by chunk and re-framed to the client,
so a fault can act at a chunk boundary:

- ``cut``: relay ``after`` chunks, then close (the stream ends mid-response);
- ``reset``: close the client's connection with a TCP reset before any byte of response;
- ``stall``: relay ``after`` chunks, then hold the connection silent until the client gives up;
- ``drip``: relay the whole response a few bytes at a time (chunk headers split across writes);
- ``garbage``: after ``after`` chunks, insert a well-framed chunk of bytes that are not SSE;
- ``bad_framing``: after ``after`` chunks, send a chunk size that is not hexadecimal;
- ``kill`` / ``restart``: call the ``on_kill`` / ``on_restart`` hook (blocking, in a worker thread)
  before forwarding: the server dies, or comes back (:attr:`FaultProxy.upstream` may change).

``FaultProxy.seen`` lists ``(index, fault kind or None)`` of every generation request.
"""
from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    kind: str  # cut, reset, stall, drip, garbage, bad_framing, kill, restart
    after: int = 3  # chunks relayed before the fault acts (cut, stall, garbage, bad_framing)
    piece: int = 3  # drip: bytes per write
    pause_s: float = 0.001  # drip: between writes (the fault itself, not synchronisation)


GARBAGE = b"\x00\xff\xfe garbage that is not SSE \x9c\n\n"


class FaultProxy:
    """``with FaultProxy(upstream_url, plan) as proxy:`` serves at ``proxy.url``."""

    def __init__(self, upstream_url: str, plan: dict[int, Fault] | None = None,
                 on_kill: Callable[[], None] | None = None, on_restart: Callable[[], str] | None = None):
        self.upstream = upstream_url.rstrip("/")
        self.plan = dict(plan or {})
        self.on_kill, self.on_restart = on_kill, on_restart
        self.seen: list[tuple[int, str | None]] = []
        self._posts = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self.url = ""

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(30)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc) -> None:
        async def shut() -> None:
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()

    def set_plan(self, plan: dict[int, Fault], start: int = 0) -> None:
        """A new plan, counting generation requests from ``start`` again."""
        self.plan, self._posts = dict(plan), start

    # ---- one connection ----------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_writer = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method = head.split(b" ", 1)[0]
            body = await reader.readexactly(_content_length(head))
            fault = None
            if method == b"POST":
                index, self._posts = self._posts, self._posts + 1
                fault = self.plan.get(index)
                self.seen.append((index, fault.kind if fault else None))
            if fault is not None and fault.kind == "reset":
                return _reset(writer)
            if fault is not None and fault.kind in ("kill", "restart"):
                hook = self.on_kill if fault.kind == "kill" else self.on_restart
                result = await asyncio.get_running_loop().run_in_executor(None, hook)
                if fault.kind == "restart":
                    self.upstream = result.rstrip("/")
            host, port = self.upstream.split("//", 1)[1].rsplit(":", 1)
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            except OSError:  # the server is down: the client sees its connection reset
                return _reset(writer)
            upstream_writer.write(_close_header(head) + body)
            await upstream_writer.drain()
            await self._relay(upstream_reader, reader, writer, fault)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            for w in (writer, upstream_writer):
                if w is not None and not w.is_closing():
                    w.close()

    async def _relay(self, upstream: asyncio.StreamReader, client_reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter, fault: Fault | None) -> None:
        head = await upstream.readuntil(b"\r\n\r\n")
        out = _Out(writer, fault)
        await out.send(_close_header(head))
        if b"transfer-encoding: chunked" not in head.lower():
            await out.send(await upstream.read())  # Connection: close: the body ends at EOF
            return
        chunks = 0
        while True:
            size_line = await upstream.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            data = (await upstream.readexactly(size + 2))[:size]  # the payload, without its CRLF
            if fault is not None and chunks >= fault.after and fault.kind in ("cut", "stall", "garbage",
                                                                                "bad_framing"):
                if fault.kind == "cut":
                    return
                if fault.kind == "stall":
                    await client_reader.read()  # until the client gives up and closes
                    return
                if fault.kind == "bad_framing":
                    await out.send(b"zz-not-a-size\r\n" + data + b"\r\n")
                    return
                await out.send(b"%x\r\n%s\r\n" % (len(GARBAGE), GARBAGE))
                fault = None  # once; the rest of the stream is relayed as it is
            await out.send(b"%x\r\n%s\r\n" % (size, data))
            if size == 0:
                return
            chunks += 1


class _Out:
    """Writes to the client, a few bytes at a time under a ``drip`` fault."""

    def __init__(self, writer: asyncio.StreamWriter, fault: Fault | None):
        self.writer, self.fault = writer, fault if fault is not None and fault.kind == "drip" else None

    async def send(self, data: bytes) -> None:
        if self.fault is None:
            self.writer.write(data)
            await self.writer.drain()
            return
        for start in range(0, len(data), self.fault.piece):
            self.writer.write(data[start:start + self.fault.piece])
            await self.writer.drain()
            await asyncio.sleep(self.fault.pause_s)


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def _close_header(head: bytes) -> bytes:
    """The head with ``Connection: close`` (any other Connection header dropped)."""
    lines = [line for line in head.rstrip(b"\r\n").split(b"\r\n")
             if line.partition(b":")[0].strip().lower() != b"connection"]
    return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n"


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not an orderly FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
