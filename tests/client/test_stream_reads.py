"""The stream loop reads whatever the network delivered (``readany``) and cuts it into SSE lines itself:
however the bytes of a real vLLM stream are split into reads, the chunks, their token counts, the text
and the stamps come out as the bytes say. Expected values are computed here from the capture files by
a separate, plain reading (split the whole file into lines, ``json.loads`` each data line), and each
chunk's stamp is the number of the read in which its line's newline arrived.

Also: records are encoded byte for byte as ``orjson.dumps(record.to_dict())`` by the fast path.
"""
from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speedbench.client.execution import stream
from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamError, StreamState
from speedbench.client.recording.writer import encode_record
from speedbench.records import EngineSpecStats, TurnRecord

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "vllm-0.32.0-cpu"
CAPTURES = ["ngram_stream.sse", "draftself_stream.sse", "draftq4_stream.sse"]
needs_wire = pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-vLLM traffic) is not here")


class Pieces:
    """A response body delivered as the given reads (``readany``), then the end (b"")."""

    def __init__(self, pieces: list[bytes]):
        self.pieces = list(pieces)
        self.reads = 0

    async def readany(self) -> bytes:
        self.reads += 1
        return self.pieces.pop(0) if self.pieces else b""


def _read(monkeypatch, pieces: list[bytes]):
    """Run the loop with the clock replaced by a counter that the reads advance: a chunk's stamp is then
    the (1-based) number of the read whose return stamped it."""
    content = Pieces(pieces)
    monkeypatch.setattr(stream, "time", types.SimpleNamespace(perf_counter_ns=lambda: content.reads))
    state, chunk_ns, chunk_tokens = StreamState(), [], []
    done = asyncio.run(stream._read_events(content, get_adapter("vllm")("http://x"), state, chunk_ns, chunk_tokens))
    return done, state, chunk_ns, chunk_tokens


def _expected(body: bytes, cuts: list[int]):
    """Per token-carrying event: its token count and the read (1-based) in which its line ended."""
    bounds = sorted(set(cuts)) + [len(body)]
    sizes, reads, text, position = [], [], "", 0
    for line in body.split(b"\n"):
        end = position + len(line)  # index of this line's newline
        position = end + 1
        line = line.strip()
        if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
            continue
        event = json.loads(line[5:])
        ids = event["choices"][0]["token_ids"] if event["choices"] else []
        text += event["choices"][0]["text"] if event["choices"] else ""
        if ids:
            sizes.append(len(ids))
            reads.append(next(i for i, bound in enumerate(bounds, start=1) if end < bound))
    return sizes, reads, text


def _split(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0] + sorted(set(cuts)) + [len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:]) if b > a]


@needs_wire
@pytest.mark.parametrize("name", CAPTURES)
@pytest.mark.parametrize("crlf", [False, True])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_split_of_a_real_stream_gives_its_chunks(monkeypatch, name, crlf, data):
    body = (WIRE / name).read_bytes()
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=60))
    sizes, reads, text = _expected(body, cuts)
    done, state, chunk_ns, chunk_tokens = _read(monkeypatch, _split(body, cuts))
    assert done
    assert chunk_tokens == sizes
    assert chunk_ns == reads
    assert state.text == text
    assert state.token_ids is not None and len(state.token_ids) == sum(sizes)


@needs_wire
def test_one_read_per_byte_and_one_read_for_all(monkeypatch):
    body = (WIRE / "draftself_stream.sse").read_bytes()
    sizes, _, _ = _expected(body, [])
    whole = _read(monkeypatch, [body])
    assert whole[3] == sizes and set(whole[2]) == {1}  # every line arrived in the first read
    single = _read(monkeypatch, [body[i:i + 1] for i in range(len(body))])
    assert single[3] == sizes


def _event(text: str, ids: list[int], completion: int) -> bytes:
    return b"data: " + json.dumps({"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
                                   "choices": [{"index": 0, "text": text, "finish_reason": None,
                                                "token_ids": ids}],
                                   "usage": {"prompt_tokens": 2, "completion_tokens": completion,
                                             "total_tokens": 2 + completion}}).encode()


def test_comments_fields_and_lines_after_done(monkeypatch):
    body = (b": keep-alive\n\nevent: message\nid: 7\nretry: 100\n" + _event("a", [5], 1) + b"\n\n\n"
            + _event("bc", [6, 7], 3) + b"\n\ndata: [DONE]\n\n" + _event("ignored", [9], 4) + b"\n\n")
    done, state, chunk_ns, chunk_tokens = _read(monkeypatch, [body])
    assert done and chunk_tokens == [1, 2] and state.text == "abc" and state.token_ids == [5, 6, 7]


def test_last_line_without_newline_at_the_end_of_the_body(monkeypatch):
    # no [DONE]: the loop reports the end, the caller decides whether that is an error
    done, state, chunk_ns, chunk_tokens = _read(monkeypatch, [_event("a", [5], 1) + b"\n", _event("b", [6], 2)])
    assert not done and chunk_tokens == [1, 1] and chunk_ns == [1, 3] and state.text == "ab"


def test_not_sse_and_endless_lines_are_malformed(monkeypatch):
    with pytest.raises(StreamError) as error:
        _read(monkeypatch, [b"this is not server-sent events\n\n"])
    assert error.value.kind == "malformed"
    monkeypatch.setattr(stream, "MAX_LINE_BYTES", 100)
    with pytest.raises(StreamError) as error:
        _read(monkeypatch, [b"data: {" + b"x" * 60, b"y" * 60])
    assert error.value.kind == "malformed" and "over 100 bytes" in error.value.message


_text = st.text(max_size=30)
_opt_int = st.none() | st.integers(0, 2 ** 62)
_stats = st.builds(EngineSpecStats, source=st.sampled_from(["vllm.metrics", "sglang.meta_info"]),
                   verify_steps=_opt_int, draft_tokens=_opt_int, accepted_tokens=_opt_int,
                   acceptance_histogram=st.none() | st.lists(st.integers(0, 99), max_size=5),
                   draft_length=_opt_int, exact=st.booleans(),
                   raw=st.dictionaries(st.text(max_size=5), st.integers(-2 ** 63, 2 ** 63 - 1)
                                       | st.floats(allow_nan=False, allow_infinity=False) | _text,
                                       max_size=3))
_records = st.builds(
    TurnRecord, record_key=_text, run_point=_text, load_shape=st.sampled_from(["closed", "open"]),
    requested_concurrency=st.none() | st.integers(1, 4096), request_rate=st.none() | st.floats(0.1, 1e3),
    question_id=_text, category=_text, sub_category=_text, turn_index=st.integers(0, 9),
    num_turns=st.integers(1, 9), warmup=st.booleans(), worker=st.integers(0, 7), prompt_tokens=st.integers(0, 10 ** 5),
    prompt_sha256=_text, scheduled_ns=st.integers(0, 2 ** 62), send_ns=st.integers(0, 2 ** 62),
    end_ns=st.integers(0, 2 ** 62), started_unix_s=st.floats(0, 2e9),
    chunk_ns=st.lists(st.integers(0, 2 ** 62), max_size=8), chunk_tokens=st.lists(st.integers(0, 9), max_size=8),
    chunks_are_steps=st.booleans(), output_tokens=st.integers(0, 10 ** 5), output_text=_text,
    finish_reason=st.none() | _text, response_id=st.none() | _text, engine_stats=st.none() | _stats,
    error=st.none() | _text, error_kind=st.none() | _text,
    output_token_ids=st.none() | st.lists(st.integers(0, 200_000), max_size=8),
    output_token_ids_source=st.none() | st.sampled_from(["engine", "reencoded"]), attempts=st.integers(1, 2))


@settings(max_examples=200, deadline=None)
@given(record=_records)
def test_record_encoding_is_byte_for_byte_the_dict_encoding(record):
    assert encode_record(record) == orjson.dumps(record.to_dict())
    assert TurnRecord.from_dict(json.loads(encode_record(record))) == record
