"""Each behaviour the real engines showed (vLLM 0.32.0 runs, the engines' source), through the stand-ins
that now reproduce it: every test here fails on the client as it was before the step definitions
(n-gram points flagged ``disagreement``, drafts accepted past max_tokens tripping the tolerance,
SGLang's K taken from its histogram, TensorRT-LLM's real fields refused and /perf_metrics unread).
"""
from __future__ import annotations

import json
import urllib.request

import pytest

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import Simulation, StandinServer

RATES = [0.85, 0.6, 0.35]


def _run(tmp_path, models_dir, engine: str, sim: Simulation, *extra: str, rows: int = 4, standin: str | None = None):
    dataset = write_dataset(tmp_path / "d", story_rows(rows))
    with StandinServer(standin or engine, sim) as server:
        code = run_cli(engine, server.url, dataset, tmp_path / "run", models_dir, "--concurrency", "2", *extra)
    assert code == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    return server, results["points"][0], read_jsonl(tmp_path / "run" / "records.jsonl")


def _disagreements(point) -> list[str]:
    return [f for f in point["flags"] if f.startswith("disagreement")]


def test_ngram_partial_drafting_gives_both_figures_and_no_false_flag(tmp_path, models_dir):
    # n-gram speculation: only some decode steps carry a draft (vLLM: num_spec_steps 34 of 63).
    # Outputs end at EOS (no step cut by max_tokens), so the engine's decode steps are exact.
    sim = Simulation(conditional_rates=RATES, draft_probability=0.5, eos_after=120)
    server, point, _ = _run(tmp_path, models_dir, "vllm", sim, "--max-tokens", "400")
    truth = list(server.truth.values())
    drafted = sum(len(t["accepted"]) for t in truth)
    decode = sum(len(t["steps"]) - 1 for t in truth)
    accepted = sum(sum(t["accepted"]) for t in truth)
    emitted = sum(sum(t["steps"]) - 1 for t in truth)
    assert drafted < decode  # the simulation really drafted only some steps
    engine = point["acceptance"]["engine"]
    assert engine["acceptance_length_drafted"] == pytest.approx(1 + accepted / drafted, rel=1e-12)
    assert engine["num_drafted_steps"] == drafted
    assert engine["tokens_per_decode_step"] == pytest.approx(emitted / decode, rel=1e-12)
    counters = point["acceptance"]["counters"]
    assert counters["num_drafted_steps"] == drafted
    # nothing was cut at max_tokens, so the counters' decode steps are exact too
    assert counters["num_decode_steps"] == decode
    assert counters["tokens_per_decode_step"] == pytest.approx(emitted / decode, rel=1e-12)
    assert not _disagreements(point), point["flags"]


def test_ngram_outputs_cut_at_max_tokens_recover_the_decode_steps(tmp_path, models_dir):
    # A drafted last step cut by max_tokens hides how many drafts it accepted past the cut, so the
    # identity alone undercounts the decode steps (by at most K per request); the chunks, which
    # never split a step, recover them (a real vLLM n-gram request: 36 chunks, 33 by the identity).
    sim = Simulation(conditional_rates=RATES, draft_probability=0.5)
    server, point, records = _run(tmp_path, models_dir, "vllm", sim, "--max-tokens", "120", "--ignore-eos")
    truth = list(server.truth.values())
    decode = sum(len(t["steps"]) - 1 for t in truth)
    engine = point["acceptance"]["engine"]
    assert engine["num_decode_steps"] == decode
    assert sum(r["engine_stats"]["decode_steps"] for r in records) == decode  # stored in the records too
    identity = sum(r["output_tokens"] - 1 - r["engine_stats"]["accepted_tokens"] for r in records)
    assert identity < decode  # the cut really hid steps
    assert engine["num_drafted_steps"] == sum(len(t["accepted"]) for t in truth)
    assert not _disagreements(point), point["flags"]


def test_drafts_accepted_past_max_tokens_are_counted_without_a_false_flag(tmp_path, models_dir):
    # Short outputs, high acceptance: the last step is often cut, its drafts counted though not emitted.
    sim = Simulation(conditional_rates=[0.95, 0.95, 0.95])
    server, point, _ = _run(tmp_path, models_dir, "vllm", sim, "--max-tokens", "9", "--ignore-eos", rows=6)
    truth = list(server.truth.values())
    past = sum(sum(t["accepted"]) - (sum(t["steps"]) - 1 - len(t["accepted"])) for t in truth)
    assert past > 0  # the cut really happened
    assert point["acceptance"]["engine"]["num_accepted_past_max_tokens"] == past
    assert point["acceptance"]["engine"]["num_accepted_tokens"] == point["acceptance"]["counters"]["num_accepted_tokens"]
    assert not _disagreements(point), point["flags"]


def test_sglang_k_comes_from_the_server_not_the_growing_histogram(tmp_path, models_dir):
    sim = Simulation(conditional_rates=[0.6, 0.5, 0.5])
    server, point, records = _run(tmp_path, models_dir, "sglang", sim, "--max-tokens", "12", "--ignore-eos",
                                  rows=6)
    histograms = [r["engine_stats"]["acceptance_histogram"] for r in records]
    assert min(len(h) for h in histograms) < 4  # some request never accepted all three drafts
    engine = point["acceptance"]["engine"]
    truth = list(server.truth.values())
    steps = sum(len(t["accepted"]) for t in truth)
    assert engine["draft_length"] == 3 and point["draft_length"] == 3
    assert engine["num_draft_tokens"] == 3 * steps
    assert engine["mean_acceptance_rate"] == pytest.approx(sum(sum(t["accepted"]) for t in truth) / (3 * steps))
    assert not [f for f in point["flags"] if f.startswith("merged_chunks")], point["flags"]
    # its counters know only emitted tokens: compared without the drafts accepted past max_tokens
    assert point["agreement"]["relative_difference"]["counters_num_accepted_tokens"] == 0
    assert not _disagreements(point), point["flags"]


def test_sglang_older_field_names(tmp_path, models_dir):
    sim = Simulation(conditional_rates=RATES, sglang_legacy_names=True)
    server, point, records = _run(tmp_path, models_dir, "sglang", sim, "--max-tokens", "40", "--ignore-eos")
    assert "spec_accept_token_num" in records[0]["engine_stats"]["raw"]
    truth = list(server.truth.values())
    engine = point["acceptance"]["engine"]
    assert engine["num_accepted_tokens"] == sum(sum(t["accepted"]) for t in truth)
    assert engine["num_draft_tokens"] == sum(3 * len(t["accepted"]) for t in truth)


def test_trtllm_accepts_its_real_fields_and_reads_perf_metrics(tmp_path, models_dir):
    extra = json.dumps({"detokenize": True, "min_p": 0.0, "repetition_penalty": 1.0, "add_special_tokens": False})
    server, point, records = _run(tmp_path, models_dir, "trtllm", Simulation(conditional_rates=RATES),
                                  "--max-tokens", "30", "--ignore-eos", "--draft-length", "3",
                                  "--extra-body", extra)
    assert all(r["error"] is None for r in records)
    assert server.received[0]["repetition_penalty"] == 1.0
    truth = server.truth
    for record in records:
        stats = record["engine_stats"]
        assert stats["source"] == "trtllm.perf_metrics" and stats["exact"] is True
        assert stats["accepted_tokens"] == sum(truth[record["response_id"]]["accepted"])
        assert stats["raw"]["request_id"] == truth[record["response_id"]]["request_id"]
    assert point["primary_acceptance_source"] == "engine"


def test_trtllm_without_return_perf_metrics_warns_and_falls_back(tmp_path, models_dir, capsys):
    sim = Simulation(conditional_rates=RATES, return_perf_metrics=False)
    _, point, _ = _run(tmp_path, models_dir, "trtllm", sim, "--max-tokens", "30", "--ignore-eos")
    err = capsys.readouterr().err
    assert "return_perf_metrics" in err and "enable_iter_perf_stats" in err
    assert "counters" not in point["acceptance"] and point["primary_acceptance_source"] == "chunks"


def test_vllm_without_per_request_metrics_warns_naming_the_flag(tmp_path, models_dir, capsys):
    sim = Simulation(conditional_rates=RATES, per_request_metrics=False)
    _, point, _ = _run(tmp_path, models_dir, "vllm", sim, "--max-tokens", "30", "--ignore-eos")
    assert "--per-request-spec-decode-metrics" in capsys.readouterr().err
    assert "engine" not in point["acceptance"] and point["primary_acceptance_source"] == "chunks"


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read()


def _post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_vllm_standin_speaks_the_recorded_wire_format():
    with StandinServer("vllm", Simulation(conditional_rates=RATES)) as server:
        assert _get(server.url + "/health")[0] == 200
        assert json.loads(_post(server.url + "/tokenize", {"prompt": "ab"})[1])["tokens"] == [97, 98]
        assert json.loads(_get(server.url + "/version")[1])["version"]
        status, body = _post(server.url + "/v1/completions", {"prompt": [], "stream": True})
        assert status == 400 and set(json.loads(body)["error"]) == {"message", "type", "param", "code"}
        _, raw = _post(server.url + "/v1/completions", {"prompt": [5, 6], "max_tokens": 12, "stream": True,
                                                        "stream_options": {"include_usage": True}})
        metrics = _get(server.url + "/metrics")[1].decode()
    events = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line[6:] != "[DONE]"]
    assert events[0]["choices"][0]["prompt_token_ids"] == [5, 6]
    assert all("prompt_token_ids" in e["choices"][0] and e["choices"][0]["prompt_token_ids"] is None
               for e in events[1:-1])
    assert events[-1]["choices"] == [] and events[-1]["system_fingerprint"]
    for counter in ("spec_decode_num_drafts", "spec_decode_num_accepted_tokens_per_pos", "generation_tokens"):
        assert f"vllm:{counter}_total{{" in metrics and f"vllm:{counter}_created{{" in metrics
    adapter = get_adapter("vllm")("http://x")
    state = StreamState()
    for event in events:
        adapter.parse_event(event, state)
    assert state.tokens_total == 12


def test_llamacpp_timings_are_decode_steps_not_drafted_steps():
    adapter = get_adapter("llamacpp")("http://x")
    state = StreamState(tokens_total=400)
    adapter.parse_event({"choices": [{"text": "", "index": 0, "finish_reason": "length"}],
                         "usage": {"completion_tokens": 400},
                         "timings": {"predicted_n": 400, "draft_n": 407, "draft_n_accepted": 297}}, state)
    stats = adapter.engine_stats(state)
    # 400 tokens = 1 + 102 decode steps + 297 accepted; which of the 102 drafted, the timings do not say
    # (the counters' spec_decode_num_drafts_total, n_draft_verif_steps, does).
    assert (stats.decode_steps, stats.drafted_steps, stats.accepted_tokens) == (102, None, 297)
