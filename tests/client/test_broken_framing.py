"""A chunked body whose framing breaks after the first read: aiohttp (3.14) keeps the parser's error
on the connection and never wakes the body's reader, and its own read timer stops too. The client's
read watchdog ends the wait after --read-timeout and names the cause (``malformed``, broken HTTP
framing); a stream that merely stalls stays a ``timeout``. A raw asyncio server on 127.0.0.1 writes
the bytes after the client parsed the first event, and waits for the client to close: nothing here
sleeps to synchronise."""
from __future__ import annotations

import asyncio

import aiohttp

from speedbench.client.engines import get_adapter
from speedbench.client.execution.stream import stream_request

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENT = b'data: {"id":"x","choices":[{"index":0,"text":" a","token_ids":[7]}]}\n\n'


def _run(tail: bytes | None):
    """One request against a server that sends one good event, then ``tail`` (None: nothing) and waits."""
    async def main():
        parsed = asyncio.Event()  # the client parsed the first event: what follows is a read of its own

        async def handle(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(HEAD + b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
            await writer.drain()
            await parsed.wait()
            if tail is not None:
                writer.write(tail)
                await writer.drain()
            await reader.read()  # until the client gives up
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with server, aiohttp.ClientSession() as session:
            adapter = get_adapter("vllm")(url, model="m")
            parse_event = adapter.parse_event

            def parse(event, state):
                parsed.set()
                return parse_event(event, state)

            adapter.parse_event = parse
            return await stream_request(session, adapter, {"prompt": [1]}, request_timeout_s=60, read_timeout_s=0.5)

    return asyncio.run(main())


def test_broken_chunk_header_after_the_first_read_is_named():
    result = _run(b"zz-not-a-size\r\n")
    assert result.error_kind == "malformed" and "broken HTTP framing" in result.error, result.error
    assert result.chunk_tokens == [1]  # the good event before it was read


def test_a_silent_stream_is_a_timeout():
    result = _run(None)
    assert result.error_kind == "timeout" and result.chunk_tokens == [1]
