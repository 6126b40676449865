"""Adapters and parsers on the documented event shapes (docs/engine-wire-formats.md), by hand."""
from __future__ import annotations

import pytest

from speedbench.client.run.counters import CounterSnapshot, counter_delta, parse_prometheus
from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import SamplingOptions, StreamError, StreamState


def test_llamacpp_final_chunk_gives_steps_from_timings():
    adapter = get_adapter("llamacpp")("http://x")
    state = StreamState()
    final = {"choices": [{"text": "", "index": 0, "finish_reason": "length"}],
             "usage": {"completion_tokens": 400, "prompt_tokens": 5, "total_tokens": 405},
             "timings": {"prompt_n": 5, "predicted_n": 400, "predicted_ms": 12.5, "draft_n": 407,
                         "draft_n_accepted": 297}}
    state.tokens_total = 400
    adapter.parse_event(final, state)
    stats = adapter.engine_stats(state)
    # steps = completion_tokens - draft_n_accepted = 103, of which one is the prefill token.
    assert (stats.verify_steps, stats.accepted_tokens, stats.draft_tokens) == (102, 297, 407)
    assert state.finish_reason == "length"


def test_llamacpp_events_of_one_step_share_a_key():
    adapter = get_adapter("llamacpp")("http://x")
    state = StreamState()
    keys = []
    for n, ms in [(1, 0.001), (2, 1.5), (3, 1.5), (4, 2.9)]:
        event = {"choices": [{"text": "a", "index": 0, "finish_reason": None}],
                 "timings": {"predicted_n": n, "predicted_ms": ms}}
        keys.append(adapter.parse_event(event, state))
    assert keys == [(1, 0.001), (1, 1.5), (1, 1.5), (1, 2.9)]
    assert state.tokens_total == 4


def test_vllm_counts_tokens_from_ids_and_reads_metrics():
    adapter = get_adapter("vllm")("http://x")
    state = StreamState()
    first = {"id": "cmpl-1", "choices": [{"index": 0, "text": "", "token_ids": [5], "prompt_token_ids": [1, 2],
                                          "finish_reason": None}],
             "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}
    second = {"id": "cmpl-1", "choices": [{"index": 0, "text": " ab", "token_ids": [6, 7, 8],
                                           "finish_reason": "length"}],
              "usage": {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}}
    final = {"id": "cmpl-1", "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6},
             "metrics": {"speculative_decoding": {"mean_acceptance_length": 3.0, "acceptance_histogram": [0, 0, 1],
                                                  "num_spec_steps": 1, "num_accepted_draft_tokens": 2,
                                                  "num_draft_tokens": 2, "num_spec_tokens": 2}}}
    assert [adapter.parse_event(e, state)[0] for e in (first, second, final)] == [1, 3, 0]
    stats = adapter.engine_stats(state)
    assert stats.acceptance_histogram == [0, 0, 1] and stats.verify_steps == 1 and stats.draft_length == 2
    assert state.response_id == "cmpl-1" and state.text == " ab"


def test_sglang_cumulative_text_and_tokens():
    adapter = get_adapter("sglang")("http://x")
    state = StreamState()
    events = [{"text": "Once", "meta_info": {"id": "r", "completion_tokens": 1, "finish_reason": None}},
              {"text": "Once upon a", "meta_info": {"id": "r", "completion_tokens": 3, "finish_reason": None}},
              {"text": "Once upon a time", "meta_info": {
                  "id": "r", "completion_tokens": 4, "finish_reason": {"type": "length", "length": 4},
                  "spec_verify_ct": 2, "spec_accept_length": 2.0}}]
    assert [adapter.parse_event(e, state)[0] for e in events] == [1, 2, 1]
    assert state.text == "Once upon a time" and state.finish_reason == "length"
    stats = adapter.engine_stats(state)
    # No correct-draft count in this release: accepted = tokens - verify steps - prefill token.
    assert (stats.verify_steps, stats.accepted_tokens) == (2, 1)
    with pytest.raises(StreamError):
        adapter.parse_event({"text": "x"}, state)


def test_trtllm_payload_has_no_vllm_only_fields():
    payload = get_adapter("trtllm")("http://x", SamplingOptions(max_tokens=7)).build_payload([1, 2])
    assert "return_token_ids" not in payload and payload["prompt"] == [1, 2] and payload["max_tokens"] == 7
    with pytest.raises(ValueError, match="return_token_ids"):
        get_adapter("trtllm")("http://x", extra_body={"return_token_ids": True}).build_payload([1])


def test_unknown_engine_is_named():
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        get_adapter("tgi")


def test_prometheus_parsing_sums_engines_and_keeps_positions():
    text = """# HELP vllm:spec_decode_num_drafts_total drafts
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} 10.0
vllm:spec_decode_num_drafts_total{model_name="m",engine="1"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="0",position="0"} 8.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="1",position="0"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="0",position="1"} 3.0
vllm:gpu_cache_usage_perc{model_name="m"} NaN
"""
    snapshot = parse_prometheus(text)
    assert snapshot.totals["vllm:spec_decode_num_drafts_total"] == 15.0
    assert snapshot.per_position["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == {0: 12.0, 1: 3.0}
    assert "vllm:gpu_cache_usage_perc" not in snapshot.totals
    later = CounterSnapshot.from_dict(snapshot.to_dict())
    later.totals["vllm:spec_decode_num_drafts_total"] = 20.0
    totals, positions = counter_delta(snapshot, later)
    assert totals["vllm:spec_decode_num_drafts_total"] == 5.0 and positions == {0: 0.0, 1: 0.0}
