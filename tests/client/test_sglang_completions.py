"""SGLang's ``/v1/completions`` route (the adapter's ``api="openai"``), against what a real SGLang
0.5.23 sent (../shared/wire/sglang-0.5.23-cpu/, read there at test time, never copied), and the
stand-in's reproduction of it.

Expected values are written down by hand from the capture lines (the ``sglext`` chunk, the usage
chunk, the text of each chunk), never taken from the code. The stand-in's ``/generate`` facts
that the captures show (event keys, statistics only in the last event, nothing speculative on a
server without speculation) are checked here too.
"""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from speedbench.client.run.counters import parse_prometheus

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "sglang-0.5.23-cpu"
pytestmark = pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-SGLang traffic) is not here")


def _events(name: str) -> list[dict]:
    return [json.loads(line[6:]) for line in (WIRE / name).read_text().splitlines()
            if line.startswith("data: ") and line[6:] != "[DONE]"]


def _parse(events: list[dict], api: str = "openai"):
    adapter = get_adapter("sglang")("http://x", api=api)
    state = StreamState()
    sizes = [adapter.parse_event(event, state)[0] for event in events]
    return state, sizes, adapter.engine_stats(state)


# -- the adapter on the captures ---------------------------------------------------------------
def test_the_openai_route_asks_for_ids_usage_and_the_statistics():
    adapter = get_adapter("sglang")("http://x", api="openai")
    payload = adapter.build_payload([1, 2, 3])
    assert adapter.generate_url == "http://x/v1/completions"
    assert payload["prompt"] == [1, 2, 3] and payload["stream"] is True
    assert payload["return_spec_tokens_details"] is True and payload["return_token_ids"] is True
    assert payload["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert "model" not in payload  # optional on SGLang; a --model is sent when given
    assert get_adapter("sglang")("http://x", model="m", api="openai").build_payload([1])["model"] == "m"
    assert get_adapter("sglang")("http://x").generate_url == "http://x/generate"
    with pytest.raises(ValueError, match="--api grpc: the sglang adapter offers native, openai"):
        get_adapter("sglang")("http://x", api="grpc")
    with pytest.raises(ValueError, match="--api openai: the vllm adapter offers native"):
        get_adapter("vllm")("http://x", api="openai")


def test_chain_statistics_from_sglext_counted_by_hand():
    state, sizes, stats = _parse(_events("standalone_v1_completions.sse"))
    # 12 text chunks, the sglext chunk (choices []), the usage chunk: 40 completion tokens.
    # Without token ids or continuous usage in the capture, each text chunk counts one token and
    # the usage chunk brings the rest (28): the total is exact, the per-chunk split is not.
    assert sizes == [1] * 12 + [0, 28] and state.tokens_total == 40
    assert state.text.startswith(", there was a little girl named Lily. She loved to play outside")
    assert state.finish_reason == "length" and state.response_id == "482a6751ae734899949eeb1a86a3e495"
    # spec_tokens_details: 11 verify calls, 28 of 33 proposed accepted, histogram [1, 0, 2, 8].
    assert stats.source == "sglang.spec_tokens_details"
    assert (stats.verify_steps, stats.accepted_tokens, stats.draft_tokens) == (11, 28, 33)
    assert stats.acceptance_histogram == [1, 0, 2, 8]
    assert stats.accepted_past_max_tokens == 1 + 11 + 28 - 40 == 0
    assert stats.raw["spec_cap_length"] == 0.0 and stats.raw["spec_cap_lens_histogram"] == []


def test_ngram_statistics_from_sglext_and_none_without_asking():
    state, _, stats = _parse(_events("ngram_v1_completions_specdetails.sse"))
    # 9 verify calls, 50 of 63 accepted, 60 tokens: 1 + 9 + 50 = 60, nothing past max_tokens.
    assert (state.tokens_total, stats.verify_steps, stats.accepted_tokens, stats.draft_tokens) == (60, 9, 50, 63)
    assert stats.acceptance_histogram == [0, 1, 0, 1, 1, 0, 0, 6] and stats.accepted_past_max_tokens == 0
    assert state.text == (' She wanted to play with it. She wanted to play with it. She asked her mom, "Can I play '
                          'with it?" Her mom said, "Yes, let\'s play with it."\nLily said, "Yes, p')
    # The same server asked without return_spec_tokens_details sends no statistics at all.
    state, _, stats = _parse(_events("ngram_v1_completions.sse"))
    assert stats is None and state.tokens_total == 40 and state.finish_reason == "length"


def test_a_malformed_sglext_is_refused():
    from speedbench.client.engines.base import StreamError

    events = _events("standalone_v1_completions.sse")
    events[-2]["sglext"]["spec_tokens_details"] = {"spec_accept_rate": 0.5}
    with pytest.raises(StreamError, match="spec_tokens_details"):
        _parse(events)


# -- the stand-in reproduces the captures' facts ---------------------------------------------
@pytest.fixture(params=["chain", "plain"])
def standin(request):
    from tests.standins.standin import StandinServer
    from tests.standins.standin_sim import Simulation

    rates = [0.9, 0.8, 0.6] if request.param == "chain" else []
    with StandinServer("sglang", Simulation(conditional_rates=rates, model="model")) as server:
        server.kind = request.param
        yield server


def _post(url: str, route: str, body: dict) -> list[dict]:
    request = urllib.request.Request(url + route, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        lines = response.read().decode().splitlines()
    assert lines[-2:] == ["data: [DONE]", ""]
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line[6:] != "[DONE]"]


def _shape(event: dict) -> dict:
    """The keys of a chunk and of its choices, the way the capture nests them."""
    return {"keys": sorted(event), "choice": [sorted(c) for c in event["choices"]],
            "usage": sorted(event["usage"]) if event.get("usage") else event.get("usage")}


def test_standin_completions_look_like_the_capture(standin):
    asked = {"prompt": [1, 403, 407], "max_tokens": 40, "stream": True, "return_spec_tokens_details": True,
             "stream_options": {"include_usage": True}}
    events = _post(standin.url, "/v1/completions", asked)
    capture = _events("standalone_v1_completions.sse")
    assert _shape(events[0]) == _shape(capture[0]) and _shape(events[-1]) == _shape(capture[-1])
    assert events[-1]["usage"]["completion_tokens"] == 40
    text_chunks = [e for e in events if e["choices"]]
    assert [c["choices"][0]["finish_reason"] for c in text_chunks][-1] == "length"
    assert all(e["usage"] is None for e in text_chunks)  # no continuous usage unless asked
    if standin.kind == "plain":  # nothing speculative: no sglext chunk at all
        assert not any("sglext" in e for e in events)
        return
    # The sglext chunk: empty choices, just before the usage chunk, the capture's fields.
    sglext = events[-2]
    assert _shape(sglext) == _shape(capture[-2]) and sglext["choices"] == []
    details = sglext["sglext"]["spec_tokens_details"]
    assert sorted(details) == sorted(capture[-2]["sglext"]["spec_tokens_details"])
    assert sum(details["spec_correct_drafts_histogram"]) == details["spec_verify_ct"] == len(text_chunks) - 1
    assert details["spec_num_proposed_drafts"] == 3 * details["spec_verify_ct"]
    # Not asked: the same request without return_spec_tokens_details has no sglext chunk.
    events = _post(standin.url, "/v1/completions", {**asked, "return_spec_tokens_details": False})
    assert not any("sglext" in e for e in events)


def test_standin_completions_ids_and_continuous_usage_add_up(standin):
    body = {"prompt": [5, 6, 7], "max_tokens": 33, "stream": True, "return_token_ids": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    events = [e for e in _post(standin.url, "/v1/completions", body) if e["choices"]]
    ids = [len(e["choices"][0]["token_ids"]) for e in events]
    assert [e["usage"]["completion_tokens"] for e in events] == [sum(ids[:i + 1]) for i in range(len(ids))]
    assert sum(ids) == 33


def test_standin_generate_looks_like_the_capture(standin):
    events = _post(standin.url, "/generate", {"input_ids": [1, 403, 407], "stream": True,
                                              "sampling_params": {"max_new_tokens": 40}})
    capture = _events("standalone_generate.sse" if standin.kind == "chain" else "plain_generate.sse")
    assert [sorted(e) for e in events] == [sorted(capture[0])] * len(events)  # text, output_ids, meta_info
    spec_keys = {k for k in capture[-1]["meta_info"] if k.startswith("spec_")}
    assert all(not any(k.startswith("spec_") for k in e["meta_info"]) for e in events[:-1])
    assert {k for k in events[-1]["meta_info"] if k.startswith("spec_")} == spec_keys  # none for plain


def test_standin_metrics_of_a_server_without_speculation(standin):
    with urllib.request.urlopen(standin.url + "/metrics", timeout=10) as response:
        mine = parse_prometheus(response.read().decode()).totals
    real = parse_prometheus((WIRE / ("standalone_metrics.txt" if standin.kind == "chain"
                                     else "plain_metrics.txt")).read_text()).totals
    # The plain server has the spec_* gauges (at 0) but no verify counter; the chain has both.
    assert {k for k in mine if k.startswith("sglang:spec_")} == {k for k in real if k.startswith("sglang:spec_")}


# -- speedbench run --api openai, end to end against the stand-in -----------------------------
def test_run_over_the_openai_route_equals_the_simulation(tmp_path, models_dir):
    """A draft tree (depth 3, 5 nodes) over /v1/completions: chunks are the simulated steps, the
    statistics the simulated ones, K the depth; the route is recorded and a resume keeps it."""
    from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
    from tests.standins.standin import StandinServer
    from tests.standins.standin_sim import Simulation

    dataset = write_dataset(tmp_path / "dataset", story_rows(4, multiturn_every=4))
    sim = Simulation(conditional_rates=[0.9, 0.7, 0.5], sglang_topk=2, sglang_tree_nodes=5)
    with StandinServer("sglang", sim) as server:
        out = tmp_path / "run"
        assert run_cli("sglang", server.url, dataset, out, models_dir, "--api", "openai", "--concurrency", "2",
                       "--max-tokens", "60", "--ignore-eos") == 0
        records = read_jsonl(out / "records.jsonl")
        assert len(records) == 3 + 3 and all(r["error"] is None for r in records)
        assert {body.get("return_spec_tokens_details") for body in server.received} == {True}
        for record in records:
            truth = server.truth[record["response_id"]]
            stats = record["engine_stats"]
            assert record["chunk_tokens"] == truth["steps"] and record["output_tokens"] == 60
            assert record["output_token_ids_source"] == "engine"
            assert stats["source"] == "sglang.spec_tokens_details"
            assert (stats["verify_steps"], stats["accepted_tokens"], stats["draft_tokens"]) == (
                len(truth["accepted_all"]), sum(truth["accepted_all"]), 5 * len(truth["accepted_all"]))
        point = json.loads((out / "results.json").read_text())["points"][0]
        accepted = sum(sum(server.truth[r["response_id"]]["accepted_all"]) for r in records)
        verify = sum(len(server.truth[r["response_id"]]["accepted_all"]) for r in records)
        assert point["acceptance"]["engine"]["acceptance_length"] == pytest.approx(1 + accepted / verify)
        assert point["acceptance"]["engine"]["draft_length"] == 3  # the tree's depth, not its 5 nodes
        # 5 proposed per verify is the tree's nodes (server_info), no excess over a chain of 3.
        assert not [rule for rule in point["consistency"] if rule.startswith("stats.")], point["consistency"]
        assert json.loads((out / "manifest.json").read_text())["options"]["api"] == "openai"
        # The same folder over the native route is another measurement: no resume.
        assert run_cli("sglang", server.url, dataset, out, models_dir, "--concurrency", "2",
                       "--max-tokens", "60", "--ignore-eos") != 0
