"""The llama.cpp adapter on the native ``/completion`` stream: ids, counts, finish reason, and a
stream cut before its ``stop: true`` event. Event shapes copied by hand from a real llama-server
(xllamacpp, stories260K) answering ``{"return_tokens": true, "timings_per_token": true}``."""
from __future__ import annotations

import asyncio
import json

import aiohttp
from aiohttp import web

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from speedbench.client.execution.stream import engine_token_ids, stream_request


def _event(content, tokens, n, ms, stop=False, **final):
    event = {"index": 0, "content": content, "tokens": tokens, "stop": stop, "id_slot": -1 if not stop else 0,
             "tokens_predicted": n, "tokens_evaluated": 5,
             "timings": {"cache_n": 0, "prompt_n": 5, "prompt_ms": 10.4, "predicted_n": n, "predicted_ms": ms}}
    event.update(final)
    return event


# Four tokens: the prefill token alone (0.001 ms), then one step that accepted two drafts (ms 2.17).
EVENTS = [_event(",", [432], 1, 0.001), _event(" there", [383], 2, 2.172), _event(" was", [286], 3, 2.172),
          _event(" a", [261], 4, 2.172)]
FINAL = _event("", [], 4, 2.172, stop=True, stop_type="limit", stopping_word="", truncated=False)
FINAL["timings"].update(draft_n=4, draft_n_accepted=2)


def test_payload_goes_to_the_native_endpoint_and_asks_for_ids():
    adapter = get_adapter("llamacpp")("http://127.0.0.1:1")
    payload = adapter.build_payload([1, 403, 407])
    assert adapter.generate_url == "http://127.0.0.1:1/completion"
    assert payload["prompt"] == [1, 403, 407] and payload["return_tokens"] is True
    assert payload["stream"] is True and payload["cache_prompt"] is False


def test_native_events_give_ids_steps_text_and_finish_reason():
    adapter = get_adapter("llamacpp")("http://x")
    state = StreamState()
    parsed = [adapter.parse_event(event, state) for event in EVENTS + [FINAL]]
    assert parsed == [(1, 0.001), (1, 2.172), (1, 2.172), (1, 2.172), (0, 2.172)]
    assert state.text == ", there was a" and state.finish_reason == "length"
    assert engine_token_ids(state, [1, 3]) == [432, 383, 286, 261]
    stats = adapter.engine_stats(state)
    # decode steps = 4 tokens - 2 accepted - 1 prefill token = 1.
    assert (stats.decode_steps, stats.accepted_tokens, stats.draft_tokens) == (1, 2, 4)
    assert adapter.stream_finished(state)


def test_stop_types_map_to_openai_finish_reasons():
    adapter = get_adapter("llamacpp")("http://x")
    for stop_type, reason in [("eos", "stop"), ("word", "stop"), ("limit", "length")]:
        state = StreamState()
        adapter.parse_event(_event("", [], 0, 0.0, stop=True, stop_type=stop_type), state)
        assert state.finish_reason == reason


def _serve_and_stream(events: list[dict]):
    async def handler(request):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        return response  # no [DONE]: the native stream never sends one

    async def main():
        app = web.Application()
        app.router.add_post("/completion", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            adapter = get_adapter("llamacpp")(f"http://127.0.0.1:{port}")
            async with aiohttp.ClientSession() as session:
                return await stream_request(session, adapter, adapter.build_payload([1, 403]))
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def test_a_complete_native_stream_keeps_the_engine_ids():
    result = _serve_and_stream(EVENTS + [FINAL])
    assert result.error is None
    assert result.chunk_tokens == [1, 3] and result.output_tokens == 4
    assert result.output_token_ids == [432, 383, 286, 261] and result.finish_reason == "length"


def test_a_native_stream_cut_before_its_stop_event_is_a_connection_error():
    result = _serve_and_stream(EVENTS)
    assert result.error_kind == "connection" and result.output_token_ids is None
