"""End to end against the real llama.cpp server (PyPI wheel xllamacpp) serving stories260K with
its Q4_0 draft model: `speedbench run` must count exactly the steps and accepted tokens that the
server itself reports, in each response's `timings` and in its Prometheus counters.
"""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset


def _http_json(url: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _continuation(tokenizer, ids: list[int]) -> str:
    """``ids`` decoded as a continuation: after an anchor token, since a SentencePiece decoder
    drops the leading space of a sequence's first word (" years" alone decodes as "years")."""
    anchor = tokenizer.encode("a")
    return tokenizer.decode(anchor + ids)[len(tokenizer.decode(anchor)):]


def _counters(url: str) -> dict[str, float]:
    """The server's counters, parsed here independently of the client's parser."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    values = {}
    for match in re.finditer(r"^(llamacpp:[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", text, re.MULTILINE):
        name = match.group(1) + (match.group(2) or "")
        values[name] = float(match.group(3))
    return values


def _assert_position_rates(engine: dict, records: list[dict], max_tokens: int, k: int) -> None:
    """llama.cpp's draft never runs past max_tokens: a step drafts min(K, tokens left - 1), which its
    own draft_n confirms request by request; the engine source's rate at position i is then counted
    over the steps that drafted i and accepted every position before it (counted here, by hand)."""
    reached, hits, histogram = [0] * k, [0] * k, {}
    for record in records:
        emitted, drafted_total = record["chunk_tokens"][0], 0
        for n in record["chunk_tokens"][1:]:
            drafted = min(k, max_tokens - emitted - 1)
            drafted_total += drafted
            histogram[str(drafted)] = histogram.get(str(drafted), 0) + 1
            for i in range(drafted):
                reached[i] += n - 1 >= i
                hits[i] += n - 1 >= i + 1
            emitted += n
        assert drafted_total == record["engine_stats"]["raw"]["draft_n"]  # the server's own count
    assert engine["per_position_null_reason"] is None
    assert engine["conditional_acceptance_rate"] == pytest.approx([h / r for h, r in zip(hits, reached)], rel=1e-12)
    assert engine["draft_length_histogram"] == dict(sorted(histogram.items(), key=lambda kv: int(kv[0])))


@pytest.fixture(scope="module")
def llama_server(models_dir):
    from speedbench.engine import EngineConfig, LocalEngine

    config = EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                          draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                          speculation="draft", draft_length=4, n_parallel=4, n_ctx_per_slot=512)
    with LocalEngine(config) as engine:
        yield engine.url


def test_tokenizer_matches_server_tokenize(llama_server, target_tokenizer):
    for text in ["Once upon a time", "Tom had a red ball number 3", "Hello, wörld! 12345\n\nnew line"]:
        server_ids = _http_json(llama_server + "/tokenize", {"content": text, "add_special": True})["tokens"]
        assert target_tokenizer.encode_completion(text) == server_ids
        assert target_tokenizer.encode_chat([{"role": "user", "content": text}]) == server_ids


def test_run_counts_equal_server_timings_and_counters(llama_server, models_dir, tmp_path, target_tokenizer):
    dataset = write_dataset(tmp_path / "dataset", story_rows(5, multiturn_every=5))  # row 4 has 3 turns
    out = tmp_path / "run"
    before = _counters(llama_server)
    code = run_cli("llamacpp", llama_server, dataset, out, models_dir, "--concurrency", "1,3",
                   "--max-tokens", "48", "--warmup", "1", "--draft-length", "4")
    after = _counters(llama_server)
    assert code == 0
    records = read_jsonl(out / "records.jsonl")
    measured = [r for r in records if not r["warmup"]]
    assert len(measured) == 2 * 7 and len([r for r in records if r["warmup"]]) == 2
    assert all(r["error"] is None for r in records)

    # Per request: one chunk per verification step, as the server's own timings say.
    for record in records:
        timings = record["engine_stats"]["raw"]
        assert sum(record["chunk_tokens"]) == timings["predicted_n"] == record["output_tokens"]
        assert len(record["chunk_tokens"]) == timings["predicted_n"] - timings.get("draft_n_accepted", 0)
        assert sum(n - 1 for n in record["chunk_tokens"]) == timings.get("draft_n_accepted", 0)
        assert max(record["chunk_tokens"]) <= 5  # never more than K+1 = 5 tokens per step
        # The native /completion stream carries each event's ids (return_tokens): they are the
        # engine's, one per counted token, and they decode to the text, by our tokenizer and by
        # the server's own /detokenize.
        ids = record["output_token_ids"]
        assert record["output_token_ids_source"] == "engine"
        assert len(ids) == record["output_tokens"] == sum(record["chunk_tokens"])
        assert _continuation(target_tokenizer, ids) == record["output_text"]
        assert _http_json(llama_server + "/detokenize", {"tokens": ids})["content"] == record["output_text"]

    # Whole run (warmup included, as the server saw it) against the Prometheus counters.
    def delta(name):
        return after.get(name, 0.0) - before.get(name, 0.0)

    steps = sum(len(r["chunk_tokens"]) for r in records)
    accepted = sum(n - 1 for r in records for n in r["chunk_tokens"])
    tokens = sum(sum(r["chunk_tokens"]) for r in records)
    assert tokens == delta("llamacpp:tokens_predicted_total")
    assert accepted == delta("llamacpp:spec_decode_num_accepted_tokens_total")
    assert steps == delta("llamacpp:tokens_predicted_total") - delta("llamacpp:spec_decode_num_accepted_tokens_total")
    assert sum(r["engine_stats"]["draft_tokens"] for r in records) == delta("llamacpp:spec_decode_num_draft_tokens_total")
    per_position = [delta(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}')
                    for i in range(4)]
    # Steps that accepted at least i+1 drafts, counted from our chunks.
    assert per_position == [sum(1 for r in records for n in r["chunk_tokens"] if n - 1 >= i + 1) for i in range(4)]

    # results.json: per point, the client's own counter deltas (warmup excluded) agree exactly too.
    results = json.loads((out / "results.json").read_text())
    for point in results["points"]:
        mine = [r for r in measured if r["run_point"] == point["run_point"]]
        counters = point["acceptance"]["counters"]
        assert counters["complete"] is True
        assert counters["num_accepted_tokens"] == sum(n - 1 for r in mine for n in r["chunk_tokens"])
        assert counters["num_token_steps"] == sum(len(r["chunk_tokens"]) for r in mine)
        engine = point["acceptance"]["engine"]
        assert engine["num_accepted_tokens"] == sum(r["engine_stats"]["accepted_tokens"] for r in mine)
        assert point["totals"]["chunks"] == sum(len(r["chunk_tokens"]) for r in mine)
        assert point["num_warmup_excluded"] == 1
        assert point["latency"]["num_requests"] == 7
        # Token totals from counters and per-request statistics agree exactly, so no
        # disagreement is flagged on a clean run (their ALs differ by definition).
        assert point["agreement"]["relative_difference"]["counters_num_accepted_tokens"] == 0.0
        assert point["agreement"]["relative_difference"]["counters_num_draft_tokens"] == 0.0
        assert not any(flag.startswith("disagreement") for flag in point["flags"]), point["flags"]
        # Its chunks are its steps: the engine's decode steps equal the chunks after the prefill's,
        # so no merged steps are reported, and tokens per decode step is (tokens - 1) / steps.
        assert not any(flag.startswith(("merged_chunks", "merged_steps")) for flag in point["flags"]), point["flags"]
        decode_steps = sum(len(r["chunk_tokens"]) - 1 for r in mine)
        assert engine["num_decode_steps"] == decode_steps and engine["step_kind"] == "decode"
        assert engine["tokens_per_decode_step"] == pytest.approx(
            sum(sum(r["chunk_tokens"]) - 1 for r in mine) / decode_steps, rel=1e-12)
        assert counters["num_drafted_steps"] <= decode_steps  # n_draft_verif_steps: drafted steps only
        _assert_position_rates(engine, mine, max_tokens=48, k=4)

    # Multi-turn: turn 2 carries the model's own earlier answers in its prompt.
    turns = sorted((r for r in measured if r["run_point"] == "c1" and r["num_turns"] == 3),
                   key=lambda r: r["turn_index"])
    assert [r["turn_index"] for r in turns] == [0, 1, 2]
    assert turns[1]["prompt_tokens"] > turns[0]["prompt_tokens"] + turns[0]["output_tokens"] - 2

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"] == "llamacpp" and manifest["model_id"].endswith("stories260K-f32.gguf")
    assert manifest["engine_version"].startswith("llama.cpp")
    assert manifest["tokenizer_sha256"] and len(manifest["dataset_config_sha256"]) == 64
    assert manifest["dataset_manifest_sha256"] == ""  # the test folder has no manifest.json
