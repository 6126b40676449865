"""Records keep the output token ids: the engine's when it streams them, else the text re-encoded.

The real vLLM ids below were read off ../shared/wire/vllm-0.32.0-cpu/ by hand (each chunk's
``token_ids``), not taken from the code.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from speedbench.client.execution.stream import engine_token_ids
from speedbench.records import TurnRecord

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "vllm-0.32.0-cpu"

# The 48 ids every recorded greedy run produced (draft model, self-draft, n-gram: lossless).
VLLM_IDS = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292,
            411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426,
            338, 391, 266, 267, 337, 335, 312, 432]


def _parse(engine: str, events: list[dict]) -> tuple[StreamState, list[int]]:
    adapter = get_adapter(engine)("http://x")
    state = StreamState()
    sizes = [adapter.parse_event(event, state)[0] for event in events]
    return state, [s for s in sizes if s]


def _wire_events(name: str) -> list[dict]:
    lines = (WIRE / name).read_text().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line[6:] != "[DONE]"]


@pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-vLLM traffic) is not here")
@pytest.mark.parametrize("name, first_chunks", [
    ("draftq4_stream.sse", [[432], [383, 286, 261, 376, 298], [315, 421, 395, 317, 426]]),
    ("draftself_stream.sse", [[432], [383, 286, 261, 376], [298, 315, 421, 395]]),
    ("ngram_stream.sse", [[432], [383], [286]]),
])
def test_real_vllm_streams_keep_their_ids_aligned_with_chunks(name, first_chunks):
    state, sizes = _parse("vllm", _wire_events(name))
    ids = engine_token_ids(state, sizes)
    assert ids == VLLM_IDS
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    assert [ids[o:o + n] for o, n in zip(offsets, sizes)][:3] == first_chunks
    if name == "ngram_stream.sse":  # its two 2-token chunks, 41st and 44th
        assert ids[offsets[40]:offsets[40] + sizes[40]] == [338, 391]
        assert ids[offsets[43]:offsets[43] + sizes[43]] == [337, 335]


def test_ids_that_do_not_add_up_are_dropped():
    state = StreamState(token_ids=[1, 2, 3])
    assert engine_token_ids(state, [2, 1]) == [1, 2, 3]
    assert engine_token_ids(state, [2, 2]) is None  # a count the ids do not match
    assert engine_token_ids(StreamState(), [1]) is None  # the engine sent none
    broken = StreamState(token_ids=[1])
    broken.add_token_ids("oops")
    assert engine_token_ids(broken, [1]) is None


def _sglang_event(output_ids, total, text="", finish=None):
    return {"text": text, "output_ids": output_ids,
            "meta_info": {"id": "s1", "completion_tokens": total, "finish_reason": finish}}


def test_sglang_output_ids_cumulative_or_incremental():
    # Without --incremental-streaming-output the whole output so far; with it, each event's delta.
    cumulative = [_sglang_event([5], 1), _sglang_event([5, 6, 7], 3), _sglang_event([5, 6, 7, 8], 4)]
    delta = [_sglang_event([5], 1), _sglang_event([6, 7], 3), _sglang_event([8], 4)]
    for events in (cumulative, delta):
        state, sizes = _parse("sglang", events)
        assert sizes == [1, 2, 1]
        assert engine_token_ids(state, sizes) == [5, 6, 7, 8]
    state, sizes = _parse("sglang", [_sglang_event([5], 1), _sglang_event([9], 3)])  # fits neither
    assert engine_token_ids(state, sizes) is None


def test_llamacpp_tokens_field_is_kept_when_sent():
    events = [{"choices": [{"text": "a", "index": 0}], "tokens": [11], "timings": {"predicted_n": 1, "predicted_ms": 1.0}},
              {"choices": [{"text": "b", "index": 0}], "tokens": [12], "timings": {"predicted_n": 2, "predicted_ms": 2.0}},
              {"choices": [{"text": "c", "index": 0}], "tokens": [13], "timings": {"predicted_n": 3, "predicted_ms": 2.0}}]
    state, sizes = _parse("llamacpp", events)
    assert engine_token_ids(state, sizes) == [11, 12, 13]
    assert get_adapter("llamacpp")("http://x").build_payload([1])["return_tokens"] is True


def test_old_records_read_without_ids_and_new_ones_round_trip():
    record = TurnRecord(record_key="c1/q/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                        request_rate=None, question_id="q", category="c", sub_category="", turn_index=0, num_turns=1,
                        warmup=False, worker=0, prompt_tokens=1, prompt_sha256="", scheduled_ns=0, send_ns=0,
                        end_ns=1, started_unix_s=0.0, chunk_tokens=[1, 2], output_tokens=3,
                        output_token_ids=[4, 5, 6], output_token_ids_source="engine")
    data = record.to_dict()
    assert TurnRecord.from_dict(data).output_token_ids == [4, 5, 6]
    old = {k: v for k, v in data.items() if not k.startswith("output_token_ids")}
    restored = TurnRecord.from_dict(old)
    assert restored.output_token_ids is None and restored.output_token_ids_source is None


# Splicing the engine's answer ids into later turns (the whole conversation encoded at once, the
# stopping EOS dropped, templates that rewrite answers): tests/tokenization/test_conversation.py.


def test_ids_of_the_wrong_type_are_dropped_not_recorded():
    for bad in ([1, "2"], [1, -3], [1, 2.0], [1, True]):
        state = StreamState()
        state.add_token_ids(bad)
        assert engine_token_ids(state, [2]) is None, bad


def test_trtllm_keeps_token_ids_when_its_stream_carries_them():
    def event(ids, total):
        return {"id": "cmpl-7", "object": "text_completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "text": "x", "token_ids": ids, "avg_decoded_tokens_per_iter": 2.0}],
                "usage": {"prompt_tokens": 3, "completion_tokens": total, "total_tokens": 3 + total}}
    state, sizes = _parse("trtllm", [event([21], 1), event([22, 23], 3)])
    assert sizes == [1, 2] and engine_token_ids(state, sizes) == [21, 22, 23]
    assert "return_token_ids" not in get_adapter("trtllm")("http://x").build_payload([1])


def test_a_resumed_conversation_splices_the_recorded_answer_ids(tmp_path, models_dir):
    """Turns 1 and 2 of a 3-turn row are cut from records.jsonl; the resumed turn 1 must get the
    same prompt as in the first run (turn 0's engine ids spliced), not its text re-encoded."""
    from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
    from tests.standins.standin import StandinServer

    dataset = write_dataset(tmp_path / "d", story_rows(1, multiturn_every=1))
    out = tmp_path / "r"
    with StandinServer("vllm") as server:
        args = ("--concurrency", "1", "--max-tokens", "12")
        assert run_cli("vllm", server.url, dataset, out, models_dir, *args) == 0
        first = {r["turn_index"]: r for r in read_jsonl(out / "records.jsonl")}
        first_prompt = server.truth[first[1]["response_id"]]["prompt_ids"]
        lines = (out / "records.jsonl").read_text().splitlines()
        (out / "records.jsonl").write_text("\n".join(l for l in lines if '"turn_index":0' in l) + "\n")
        assert run_cli("vllm", server.url, dataset, out, models_dir, *args) == 0
        again = {r["turn_index"]: r for r in read_jsonl(out / "records.jsonl")}
        resumed_prompt = server.truth[again[1]["response_id"]]["prompt_ids"]
    assert first[0]["output_token_ids_source"] == "engine"
    assert again[1]["response_id"] != first[1]["response_id"]  # really sent again
    assert resumed_prompt == first_prompt
    ids = first[0]["output_token_ids"]
    assert any(resumed_prompt[i:i + len(ids)] == ids for i in range(len(resumed_prompt)))
