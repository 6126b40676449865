"""vLLM, SGLang and TensorRT-LLM through local stand-ins that speak their documented wire formats
(the real engines need GPUs). The stand-ins simulate speculative decoding with known
per-position acceptance rates; the client must recover them from every source the engine
offers, and the same token ids must reach every adapter for the same row.
"""
from __future__ import annotations

import json
import math

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import TRTLLM_FIELDS, Simulation, StandinServer, prompt_key

RATES = [0.85, 0.6, 0.35]  # conditional AR_1..AR_3
ROWS = 8
MAX_TOKENS = 400


def _within_sampling_error(estimate: float, true: float, trials: int) -> bool:
    # 4.5 binomial standard errors: a correct client fails this well under once in 10^4 runs.
    return abs(estimate - true) <= 4.5 * math.sqrt(true * (1 - true) / max(1, trials)) + 1e-12


@pytest.fixture(scope="module")
def engine_runs(tmp_path_factory, models_dir):
    """One run per engine (plus the generic openai adapter against the vLLM stand-in)."""
    root = tmp_path_factory.mktemp("standin_runs")
    dataset = write_dataset(root / "dataset", story_rows(ROWS, multiturn_every=4))
    runs = {}
    for engine, standin in (("vllm", "vllm"), ("sglang", "sglang"), ("trtllm", "trtllm"), ("openai", "vllm")):
        with StandinServer(standin, Simulation(conditional_rates=RATES)) as server:
            out = root / engine
            # TensorRT-LLM's statistics do not carry K (its server config does): the user gives it.
            k = ("--draft-length", str(len(RATES))) if engine == "trtllm" else ()
            code = run_cli(engine, server.url, dataset, out, models_dir, "--concurrency", "3",
                           "--max-tokens", str(MAX_TOKENS), "--ignore-eos", *k)
            runs[engine] = {"code": code, "server": server, "out": out,
                            "records": read_jsonl(out / "records.jsonl"),
                            "results": json.loads((out / "results.json").read_text())}
    return runs


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_chunks_are_the_simulated_steps(engine_runs, engine):
    run = engine_runs[engine]
    assert run["code"] == 0
    truth = run["server"].truth
    assert len(run["records"]) == ROWS + 2 * (ROWS // 4)  # every 4th row has 3 turns
    for record in run["records"]:
        assert record["error"] is None and record["finish_reason"] == "length"
        assert record["chunk_tokens"] == truth[record["response_id"]]["steps"]
        assert record["output_tokens"] == MAX_TOKENS


@pytest.mark.parametrize("engine,sources", [("vllm", ["chunks", "engine", "counters"]),
                                            ("sglang", ["chunks", "engine"]),
                                            ("trtllm", ["chunks"])])
def test_recovers_known_rates_from_every_source(engine_runs, engine, sources):
    point = engine_runs[engine]["results"]["points"][0]
    truth = engine_runs[engine]["server"].truth.values()
    steps = [a for t in truth for a in t["accepted"]]
    for source in sources:
        rates = point["acceptance"][source]["conditional_acceptance_rate"]
        assert len(rates) == len(RATES), source
        reached = len(steps)
        for position, true in enumerate(RATES):
            assert _within_sampling_error(rates[position], true, reached), (source, position, rates)
            reached = sum(1 for a in steps if a >= position + 1)
    true_al = 1 + sum(math.prod(RATES[: i + 1]) for i in range(len(RATES)))
    for source in ("engine", "counters"):
        if source in point["acceptance"] and point["acceptance"][source].get("acceptance_length"):
            assert abs(point["acceptance"][source]["acceptance_length"] - true_al) < 0.1
    assert point["primary_acceptance_source"] == "engine"


def test_engine_sources_equal_the_simulation_exactly(engine_runs):
    for engine in ("vllm", "sglang", "trtllm"):
        truth = engine_runs[engine]["server"].truth.values()
        engine_source = engine_runs[engine]["results"]["points"][0]["acceptance"]["engine"]
        # Exact per-request statistics (TensorRT-LLM: /perf_metrics joined by request id), drafts
        # accepted on the last step past max_tokens included, as the engines count them.
        assert engine_source["num_accepted_tokens"] == sum(sum(t["accepted"]) for t in truth), engine
        assert engine_source["num_steps"] == sum(len(t["accepted"]) for t in truth), engine
        assert engine_source["num_decode_steps"] == sum(len(t["steps"]) - 1 for t in truth), engine
        assert engine_source["num_decode_tokens"] == sum(sum(t["steps"]) - 1 for t in truth), engine
        assert engine_source["sources"] == [{"vllm": "vllm.metrics", "sglang": "sglang.meta_info",
                                              "trtllm": "trtllm.perf_metrics"}[engine]]
    vllm = engine_runs["vllm"]["results"]["points"][0]["acceptance"]
    histogram = [0] * (len(RATES) + 1)
    for t in engine_runs["vllm"]["server"].truth.values():
        for a in t["accepted"]:
            histogram[a] += 1
    assert vllm["engine"]["acceptance_histogram"] == histogram
    assert vllm["counters"]["num_accepted_tokens"] == sum(i * h for i, h in enumerate(histogram))


def test_identical_token_ids_reach_every_adapter(engine_runs, target_tokenizer):
    prompts = {}
    for engine, run in engine_runs.items():
        by_row = {}
        for record in run["records"]:
            ids = run["server"].truth[record["response_id"]]["prompt_ids"]
            assert prompt_key(ids) == record["prompt_sha256"]
            by_row[(record["question_id"], record["turn_index"])] = ids
        prompts[engine] = by_row
    first = prompts["vllm"]
    for engine, by_row in prompts.items():
        assert by_row.keys() == first.keys(), engine
        for key in first:
            if key[1] == 0:  # later turns carry the model's (simulated, engine-specific) answers
                assert by_row[key] == first[key], (engine, key)
    rows = {r.question_id: r for r in story_rows(ROWS, multiturn_every=4)}
    for (question_id, turn), ids in first.items():
        if turn == 0:
            assert ids == target_tokenizer.encode_completion(rows[question_id].turns[0])


def test_payloads_follow_each_engine(engine_runs):
    vllm_body = engine_runs["vllm"]["server"].received[0]
    assert vllm_body["return_token_ids"] is True
    assert vllm_body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    sglang_body = engine_runs["sglang"]["server"].received[0]
    assert set(sglang_body) == {"input_ids", "sampling_params", "stream"}
    assert sglang_body["sampling_params"]["max_new_tokens"] == MAX_TOKENS
    for body in engine_runs["trtllm"]["server"].received:
        assert set(body) <= TRTLLM_FIELDS


def _standin_ids(count: int) -> list[int]:
    return [(7 * k + 3) % 500 + 3 for k in range(count)]  # what the stand-in generates, in order


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_multiturn_history_holds_the_models_answers(engine_runs, target_tokenizer, engine):
    """Answers enter the history as the ids the engine streamed (vLLM, SGLang); TensorRT-LLM sends
    only text, so there the history is the rendered conversation encoded whole."""
    run = engine_runs[engine]
    records = {(r["question_id"], r["turn_index"]): r for r in run["records"]}
    rows = [r for r in story_rows(ROWS, multiturn_every=4) if len(r.turns) == 3]
    assert rows
    for row in rows:
        answers = [records[(row.question_id, t)]["output_text"] for t in range(2)]
        messages = [{"role": "user", "content": row.turns[0]}, {"role": "assistant", "content": answers[0]},
                    {"role": "user", "content": row.turns[1]}, {"role": "assistant", "content": answers[1]},
                    {"role": "user", "content": row.turns[2]}]
        if engine == "trtllm":
            expected = target_tokenizer.encode_chat(messages)
        else:  # the whole conversation encoded at once, each answer's tokens replaced by the generated ids
            text = target_tokenizer.render_chat(messages)
            encode = (target_tokenizer.encode if target_tokenizer.has_chat_template
                      else target_tokenizer.encode_completion)
            whole = encode(text)
            # where each answer starts and ends in the whole encoding, from the encodings of the text's
            # prefixes (each a prefix of the whole: no token spans an answer's edge here)
            cuts = []
            at = 0
            for answer in answers:
                start = text.index(answer, at)
                at = start + len(answer)
                for prefix in (encode(text[:start]), encode(text[:at])):
                    assert whole[:len(prefix)] == prefix
                    cuts.append(len(prefix))
            lengths = [records[(row.question_id, t)]["output_tokens"] for t in range(2)]
            expected = (whole[:cuts[0]] + _standin_ids(lengths[0]) + whole[cuts[1]:cuts[2]]
                        + _standin_ids(lengths[1]) + whole[cuts[3]:])
        assert run["server"].truth[records[(row.question_id, 2)]["response_id"]]["prompt_ids"] == expected
        # the records say how: both answers spliced as the engine's ids (TensorRT-LLM: no ids, none counted)
        counts = [(records[(row.question_id, t)]["prompt_answers_spliced"], records[(row.question_id, t)][
            "prompt_answers_as_text"], records[(row.question_id, t)]["prompt_answers_mismatched"]) for t in range(3)]
        assert counts == ([(None, None, None), (0, 0, 0), (0, 0, 0)] if engine == "trtllm" else
                          [(None, None, None), (1, 0, 0), (2, 0, 0)])


@pytest.mark.parametrize("engine, source", [("vllm", "engine"), ("sglang", "engine"), ("openai", "engine"),
                                            ("trtllm", "reencoded")])
def test_records_keep_output_token_ids(engine_runs, target_tokenizer, engine, source):
    for record in engine_runs[engine]["records"]:
        assert record["output_token_ids_source"] == source
        if source == "engine":
            assert record["output_token_ids"] == _standin_ids(record["output_tokens"])
            assert len(record["output_token_ids"]) == sum(record["chunk_tokens"])
        else:
            assert record["output_token_ids"] == target_tokenizer.encode(record["output_text"])


def test_trtllm_rejects_unknown_fields(tmp_path, models_dir):
    with StandinServer("trtllm") as server:
        dataset = write_dataset(tmp_path / "d", story_rows(2))
        # The adapter refuses to build a payload trtllm-serve would reject...
        code = run_cli("trtllm", server.url, dataset, tmp_path / "a", models_dir, "--concurrency", "1",
                       "--extra-body", '{"return_token_ids": true}')
        assert code == 2 and not server.received
        # ...and the stand-in answers such a payload with the engine's 400 error.
        code = run_cli("vllm", server.url, dataset, tmp_path / "b", models_dir, "--concurrency", "1",
                       "--max-tokens", "8", "--max-errors", "10")
    records = read_jsonl(tmp_path / "b" / "records.jsonl")
    assert code == 0 and len(records) == 2
    for record in records:
        assert record["error_kind"] == "http_4xx"
        assert "extra_forbidden" in record["error"] and "return_token_ids" in record["error"]


def test_merged_chunks_are_flagged_not_disagreement(tmp_path, models_dir):
    with StandinServer("vllm", Simulation(conditional_rates=RATES, coalesce=2)) as server:
        dataset = write_dataset(tmp_path / "d", story_rows(3))
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "2",
                       "--max-tokens", "200", "--ignore-eos") == 0
    point = json.loads((tmp_path / "r" / "results.json").read_text())["points"][0]
    flags = " ".join(point["flags"])
    # Merged chunks are detected and reported, and they are not a disagreement of the sources:
    # the engine's exact statistics are primary (before: "disagreement" on every such point).
    assert "merged_chunks" in flags and "merged_steps" in flags and "disagreement" not in flags
    assert point["acceptance"]["chunks"]["trim_report"]["num_merged_chunks"] > 0
    assert point["primary_acceptance_source"] == "engine"
