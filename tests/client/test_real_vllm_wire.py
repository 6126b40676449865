"""The streams and /metrics pages a real vLLM 0.32.0 sent (../shared/wire/vllm-0.32.0-cpu/, read there
at test time, never copied) parse to the right tokens and statistics.

Every expected value below was counted by hand from the capture files (token ids per chunk, the
final ``metrics.speculative_decoding`` object, the counter lines), not taken from the code.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from speedbench.client.run.counters import counter_delta, parse_prometheus
from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamError, StreamState
from speedbench.analysis.run_results import analyse_point
from speedbench.metrics.acceptance.steps import record_steps
from speedbench.records import TurnRecord

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "vllm-0.32.0-cpu"
pytestmark = pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-vLLM traffic) is not here")


def _events(name: str) -> list[dict]:
    events = []
    for line in (WIRE / name).read_text().splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            events.append(json.loads(line[6:]))
    return events


def _parse(name: str):
    adapter = get_adapter("vllm")("http://x")
    state = StreamState()
    sizes = [adapter.parse_event(event, state)[0] for event in _events(name)]
    return state, [s for s in sizes if s], adapter.engine_stats(state)


def _record(name: str, sizes, state, stats) -> TurnRecord:
    return TurnRecord(record_key=f"c1/{name}/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id=name, category="writing", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=5, prompt_sha256="0" * 64, scheduled_ns=0,
                      send_ns=0, end_ns=10 ** 9 * len(sizes), started_unix_s=0.0,
                      chunk_ns=[10 ** 9 * (i + 1) for i in range(len(sizes))], chunk_tokens=sizes,
                      chunks_are_steps=True, output_tokens=state.tokens_total, output_text=state.text,
                      finish_reason=state.finish_reason, response_id=state.response_id, engine_stats=stats)


def test_ngram_stream_counts_drafted_steps_apart_from_decode_steps():
    state, sizes, stats = _parse("ngram_stream.sse")
    # 46 chunks: the prefill's token [432], 43 more single tokens and two 2-token chunks ([338, 391], [337, 335])
    assert (len(sizes), sizes.count(1), sizes.count(2), sum(sizes)) == (46, 44, 2, 48)
    assert state.tokens_total == 48 and state.finish_reason == "length"
    assert state.response_id == "cmpl-944f825d690a565e" and state.text.startswith(", there was a little girl")
    # the final object: 8 drafted steps, 2 accepted of 24 drafted, histogram [6, 2, 0, 0], K = 3
    assert (stats.drafted_steps, stats.accepted_tokens, stats.draft_tokens, stats.draft_length) == (8, 2, 24, 3)
    assert stats.acceptance_histogram == [6, 2, 0, 0]
    # 48 tokens = 1 (prefill) + 45 decode steps + 2 accepted drafts: 37 steps carried no draft
    assert (stats.decode_steps, stats.accepted_past_max_tokens) == (45, 0)


def test_draft_model_stream_counts_drafts_accepted_past_max_tokens():
    state, sizes, stats = _parse("draftself_stream.sse")
    assert sizes == [1] + [4] * 11 + [3] and state.tokens_total == 48
    # 12 drafted steps accepting 3 each = 36 counted; the last step was cut at 3 tokens: 35 emitted
    assert (stats.drafted_steps, stats.accepted_tokens, stats.decode_steps, stats.accepted_past_max_tokens) == \
        (12, 36, 12, 1)
    state, sizes, stats = _parse("draftq4_stream.sse")
    assert sizes == [1, 5, 5, 5, 5, 3, 3, 5, 4, 4, 5, 3]
    # histogram [0, 0, 2, 2, 7]: 2*2 + 2*3 + 7*4 = 38 accepted over 11 steps; 47 emitted after the prefill
    assert (stats.drafted_steps, stats.accepted_tokens, stats.decode_steps, stats.accepted_past_max_tokens) == \
        (11, 38, 11, 2)


def test_stream_without_per_request_metrics_has_no_engine_statistics():
    state, sizes, stats = _parse("draftq4_noperreq_stream.sse")
    assert stats is None and sum(sizes) == 48 and len(sizes) == 12
    usage_chunk = _events("draftq4_noperreq_stream.sse")[-1]
    assert usage_chunk["choices"] == [] and usage_chunk["system_fingerprint"].startswith("vllm-0.32.0")


def test_recorded_streams_give_no_false_flags_and_named_figures():
    for name, al_drafted, per_step in (("ngram_stream.sse", 1 + 2 / 8, 47 / 45),
                                       ("draftself_stream.sse", 1 + 36 / 12, 47 / 12),
                                       ("draftq4_stream.sse", 1 + 38 / 11, 47 / 11)):
        state, sizes, stats = _parse(name)
        record = _record(name, sizes, state, stats)
        assert record_steps(record).decode_tokens == 47
        point = analyse_point("c1", [record], "vllm", None, 0.02, 0).to_dict()
        engine = point["acceptance"]["engine"]
        assert engine["acceptance_length_drafted"] == pytest.approx(al_drafted, rel=1e-12), name
        assert engine["tokens_per_decode_step"] == pytest.approx(per_step, rel=1e-12), name
        assert point["primary_acceptance_source"] == "engine"
        assert not [f for f in point["flags"] if f.startswith("disagreement")], (name, point["flags"])


def test_error_body_is_nested_and_reaches_the_record():
    body = json.loads((WIRE / "ngram_error_too_long.txt").read_text())
    assert set(body["error"]) == {"message", "type", "param", "code"} and body["error"]["code"] == 400
    adapter = get_adapter("vllm")("http://x")
    with pytest.raises(StreamError) as caught:
        adapter.parse_event(body, StreamState())
    assert caught.value.kind == "engine_error" and "maximum context length is 512" in caught.value.message


def _line_value(text: str, pattern: str) -> float:
    """One sample's value, found by plain text (independent of the parser under test)."""
    (match,) = re.findall(rf"^{re.escape(pattern)} (\S+)$", text, flags=re.M)
    return float(match)


def test_metrics_page_parses_counters_not_created_gauges():
    text = (WIRE / "ngram_metrics_after1.txt").read_text()
    snapshot = parse_prometheus(text)
    label = 'engine="0",model_name="stories260K"'
    assert snapshot.totals["vllm:spec_decode_num_drafts_total"] == 8.0
    assert snapshot.totals["vllm:spec_decode_num_draft_tokens_total"] == 24.0
    assert snapshot.totals["vllm:spec_decode_num_accepted_tokens_total"] == 2.0
    assert snapshot.totals["vllm:generation_tokens_total"] == 48.0
    assert _line_value(text, f"vllm:spec_decode_num_drafts_created{{{label}}}") > 1.7e9  # a timestamp...
    assert not [name for name in snapshot.totals if name.endswith("_created")]  # ...never a count
    assert snapshot.per_position == {"vllm:spec_decode_num_accepted_tokens_per_pos_total": {0: 2.0, 1: 0.0, 2: 0.0}}


def test_metrics_deltas_over_a_client_run():
    before_text = (WIRE / "draftq4_metrics_before_client.txt").read_text()
    after_text = (WIRE / "draftq4_metrics_after_client.txt").read_text()
    totals, per_position = counter_delta(parse_prometheus(before_text), parse_prometheus(after_text))
    label = 'engine="0",model_name="stories260K"'
    for name in ("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens",
                 "generation_tokens"):
        sample = f"vllm:{name}_total{{{label}}}"
        assert totals[f"vllm:{name}_total"] == _line_value(after_text, sample) - _line_value(before_text, sample)
    expected = [_line_value(after_text, f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{label},position="{i}"}}')
                - _line_value(before_text, f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{label},position="{i}"}}')
                for i in range(4)]
    assert [per_position[i] for i in range(4)] == expected
    assert sum(expected) == totals["vllm:spec_decode_num_accepted_tokens_total"]


def test_position_labelled_created_gauges_never_replace_the_counter():
    # The same families as vLLM's page, the *_created gauge listed first: a parser that keeps the
    # first position-labelled metric it sees reads timestamps as acceptance counts.
    text = "\n".join([
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_created gauge",
        'vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",position="0"} 1.7961097307928972e+09',
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 5.0',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",position="0"} 2.0', ""])
    zero = parse_prometheus(text.replace(" 5.0", " 0.0").replace(" 2.0", " 0.0"))
    _, per_position = counter_delta(zero, parse_prometheus(text))
    assert per_position == {0: 7.0}
