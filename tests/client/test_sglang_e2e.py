"""End to end against a real SGLang (sglang 0.5.23 from .venv-sglang; its CPU kernels are our
plain-torch stand-in, speedbench/engine/sglang_kernel_standin) serving stories260K converted to a
Hugging Face folder: n-gram, a draft chain and a draft tree, `speedbench run` at concurrency 1
and 3 on qualitative prompts.

Checks: no errors; per-request statistics (the final ``meta_info``) add up to the server's own
Prometheus counters; greedy outputs with speculation equal those without (a server with no
speculation, started first); no false flags; the client's figures equal sums recomputed here from
the records. One server per speculation mode (module fixtures, one server at a time). On the draft
chain's server the same prompts are sent again over ``/v1/completions`` (``--api openai``): the
statistics from ``sglext.spec_tokens_details`` equal those of ``/generate`` request by request (a
greedy draft model proposes the same drafts for the same text) and add up to the counters.
"""
from __future__ import annotations

import json
import urllib.request
from collections import defaultdict

import pytest

from tests.standins.guard_check import guard_flags_justified
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = {"ngram": 7, "draft": 3, "draft-tree": 3}
NODES = {"ngram": 7, "draft": 3, "draft-tree": 5}  # draft tokens proposed per verify (a tree: its nodes)
MAX_TOKENS = 48
OPENAI_MODES = ("draft",)  # modes whose server is also measured over /v1/completions


def _counters(url: str) -> dict[str, float]:
    """Every sglang:* sample, summed over its labels (is_streaming, ranks), parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("sglang:"):
                values[sample.name] = values.get(sample.name, 0.0) + sample.value
    return values


def _serve(mode: str, tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.sglang import sglang_python

    try:
        sglang_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not sglang'", pytrace=False)
    work = tmp_path_factory.mktemp(f"sglang-{mode}")
    config = EngineConfig(engine="sglang", speculation=mode, draft_length=K.get(mode, 1), n_parallel=3,
                          max_model_len=1024, work_dir=str(work))
    return LocalEngine(config, log_path=work / "server.log")


def _run(engine, mode: str, models_dir, root, concurrency: str, api: str = "native") -> dict:
    dataset = write_dataset(root / "dataset", story_rows(6, multiturn_every=6), config="qualitative")
    out = root / f"run-{api}"
    before = _counters(engine.url)
    extra = ["--draft-length", str(K[mode])] if mode in K else ["--draft-length", "0"]
    code = run_cli("sglang", engine.url, dataset, out, models_dir, "--config", "qualitative", "--api", api,
                   "--concurrency", concurrency, "--max-tokens", str(MAX_TOKENS), "--warmup", "1", *extra)
    after = _counters(engine.url)
    delta = {name: after[name] - before.get(name, 0.0) for name in after}
    with urllib.request.urlopen(engine.url + "/server_info", timeout=30) as response:
        server_info = json.loads(response.read())
    return {"mode": mode, "code": code, "out": out, "records": read_jsonl(out / "records.jsonl"), "delta": delta,
            "server_info": server_info}


@pytest.fixture(scope="module")
def sglang_server_baseline(models_dir, tmp_path_factory):
    """The same prompts without speculation (its server stopped before the others start)."""
    with _serve("none", tmp_path_factory) as engine:
        return _run(engine, "none", models_dir, tmp_path_factory.mktemp("run-none"), "1")


@pytest.fixture(scope="module", params=["ngram", "draft", "draft-tree"])
def sglang_server_run(request, sglang_server_baseline, models_dir, tmp_path_factory):
    mode = request.param
    with _serve(mode, tmp_path_factory) as engine:
        root = tmp_path_factory.mktemp(f"run-{mode}")
        run = _run(engine, mode, models_dir, root, "1,3")
        if mode in OPENAI_MODES:
            run["openai"] = _run(engine, mode, models_dir, root, "1,3", api="openai")
        return run


def _meta(record: dict) -> dict:
    return record["engine_stats"]["raw"]


def test_run_has_no_errors(sglang_server_run):
    run = sglang_server_run
    assert run["code"] == 0
    records = run["records"]
    assert len([r for r in records if not r["warmup"]]) == 2 * 8  # 5 single-turn rows + one of 3 turns, twice
    assert all(r["error"] is None for r in records), [r["error"] for r in records if r["error"]]
    assert all(r["engine_stats"] and r["engine_stats"]["source"] == "sglang.meta_info" for r in records)


def test_per_request_statistics_add_up_to_the_servers_counters(sglang_server_run):
    run = sglang_server_run
    records, delta = run["records"], run["delta"]
    assert sum(_meta(r)["spec_verify_ct"] for r in records) == delta["sglang:spec_verify_calls_total"]
    assert sum(r["output_tokens"] for r in records) == delta["sglang:generation_tokens_total"]
    assert sum(r["prompt_tokens"] for r in records) == delta["sglang:prompt_tokens_total"]


def test_per_request_statistics_are_consistent(sglang_server_run):
    mode, records = sglang_server_run["mode"], sglang_server_run["records"]
    for record in records:
        meta = _meta(record)
        histogram, verify = meta["spec_correct_drafts_histogram"], meta["spec_verify_ct"]
        assert sum(histogram) == verify and len(histogram) <= K[mode] + 1  # a tree: at most its depth
        assert sum(j * h for j, h in enumerate(histogram)) == meta["spec_num_correct_drafts"]
        assert meta["spec_num_proposed_drafts"] == NODES[mode] * verify
        # The prefill's token, then 1 + accepted per verify; a cut last verify may count more.
        assert record["output_tokens"] <= 1 + verify + meta["spec_num_correct_drafts"]
        assert record["output_tokens"] > verify + meta["spec_num_correct_drafts"] - K[mode]


def test_greedy_outputs_equal_those_without_speculation(sglang_server_run, sglang_server_baseline):
    baseline = {(r["question_id"], r["turn_index"]): r["output_text"]
                for r in sglang_server_baseline["records"] if not r["warmup"]}
    assert len(baseline) == 8 and all(text.strip() for text in baseline.values())
    by_point = defaultdict(dict)
    for record in sglang_server_run["records"]:
        if not record["warmup"]:
            by_point[record["run_point"]][(record["question_id"], record["turn_index"])] = record["output_text"]
    assert set(by_point) == {"c1", "c3"}
    for point, texts in by_point.items():
        assert texts == baseline, point


def test_client_figures_equal_independent_sums(sglang_server_run):
    mode, out, records = sglang_server_run["mode"], sglang_server_run["out"], sglang_server_run["records"]
    results = json.loads((out / "results.json").read_text())
    measured = [r for r in records if not r["warmup"]]
    assert [p["run_point"] for p in results["points"]] == ["c1", "c3"]
    for point in results["points"]:
        mine = [r for r in measured if r["run_point"] == point["run_point"]]
        engine = point["acceptance"]["engine"]
        accepted = sum(_meta(r)["spec_num_correct_drafts"] for r in mine)
        verify = sum(_meta(r)["spec_verify_ct"] for r in mine)
        assert point["primary_acceptance_source"] == "engine"
        assert engine["num_accepted_tokens"] == accepted
        assert engine["acceptance_length"] == pytest.approx(1 + accepted / verify, rel=1e-12)
        # Acceptance per position by depth: verifies that accepted at least d drafts, over all verifies.
        histograms = [_meta(r)["spec_correct_drafts_histogram"] for r in mine]
        reached = [sum(sum(h[d:]) for h in histograms) / verify for d in range(1, K[mode] + 1)]
        assert engine["marginal_acceptance_rate"] == pytest.approx(reached, rel=1e-12)
        assert engine["draft_length"] == K[mode]  # a tree's depth, not its node count
        assert point["totals"]["output_tokens"] == sum(r["output_tokens"] for r in mine)
        assert point["latency"]["num_requests"] == len(mine) == 8


def _one_read(record: dict) -> bool:
    """Whether a record's decode timing is its delivery's: its token chunks after the first (two or
    more) carry one client stamp (the client read them all at once), or the tokens between its first
    and last chunk arrived faster than 20,000 tokens/s, which no engine decodes (a burst of reads)."""
    stamps = [t for t, n in zip(record["chunk_ns"], record["chunk_tokens"]) if n > 0]
    if len(stamps) >= 2 and (len(set(stamps)) == 1 or (len(stamps) >= 3 and len(set(stamps[1:])) == 1)):
        return True
    tokens = [n for n in record["chunk_tokens"] if n > 0]
    return len(stamps) >= 2 and sum(tokens[1:-1]) > 20_000 * (stamps[-1] - stamps[0]) / 1e9


def test_no_false_flags(sglang_server_run):
    """Only flags that describe this busy machine may be raised, and exactly when the records show
    them. SGLang's stream sends a request's state when its HTTP side gets to it, so two verify
    steps can arrive as one event (at concurrency 3: one event in 176 at load 2-3; three 16-token
    chunks of two 8-token n-gram steps at load 13): ``merged_steps`` when the token-carrying chunks
    after the prefill's are fewer than the engine's decode steps, ``merged_chunks`` when a chunk
    holds more than K+1 tokens (one step's most). A descheduled client reads a whole answer at
    once (21 chunks in one read at load 15), or in a burst of reads: ``client_lag``. Disagreement or consistency flags
    would be false on a run whose sources agree."""
    mode, records = sglang_server_run["mode"], sglang_server_run["records"]
    for point in json.loads((sglang_server_run["out"] / "results.json").read_text())["points"]:
        mine = [r for r in records if not r["warmup"] and r["run_point"] == point["run_point"]]
        raised = {flag.split(":")[0] for flag in point["flags"]}
        assert raised - set(guard_flags_justified(point)) <= {"merged_steps", "merged_chunks", "client_lag"}, point["flags"]
        missing = (sum(r["engine_stats"]["decode_steps"] for r in mine)
                   - sum(sum(1 for t in r["chunk_tokens"][1:] if t) for r in mine))
        oversized = sum(1 for r in mine for t in r["chunk_tokens"] if t > K[mode] + 1)
        assert missing >= 0 and ("merged_steps" in raised) == (missing > 0), (missing, point["flags"])
        if oversized:
            assert "merged_chunks" in raised, (oversized, point["flags"])
        if "merged_chunks" in raised:
            assert missing > 0, point["flags"]  # a merged chunk holds several of the engine's steps
        assert ("client_lag" in raised) == any(_one_read(r) for r in mine), point["flags"]


_TREE_CHECK = r"""
import torch, sgl_kernel
# A hand-made tree, root 0: children 1 (token 5) and 2 (token 6); node 1 has child 3 (token 7).
candidates = torch.tensor([[4, 5, 6, 7]])
first_child = torch.tensor([[1, 3, -1, -1]])
sibling = torch.tensor([[-1, 2, -1, -1]])
index = torch.tensor([[0, 1, 2, 3]])
target = torch.tensor([[6, 8, 9, 1]])  # the target's argmax after each node
predicts = torch.zeros(4, dtype=torch.int32)
accept_index = torch.full((1, 3), -1, dtype=torch.int32)
accepted = torch.zeros(1, dtype=torch.int32)
sgl_kernel.verify_tree_greedy_cpu(predicts=predicts, accept_index=accept_index, accept_token_num=accepted,
    candidates=candidates, retrive_index=index, retrive_next_token=first_child,
    retrive_next_sibling=sibling, target_predict=target)
print(accept_index.tolist(), accepted.tolist(), predicts.tolist())
"""


def test_kernel_standin_verifies_a_tree_greedily():
    """The stand-in's tree verification on a tree small enough to walk by hand: the target wants 6
    after the root, which is node 2 (node 1's sibling); node 2 has no child, so one draft is
    accepted and the bonus token is the target's 9 after node 2."""
    import subprocess

    from speedbench.engine.sglang import KERNEL_STANDIN, sglang_python

    done = subprocess.run([str(sglang_python()), "-c", _TREE_CHECK], capture_output=True, text=True,
                          env={"PYTHONPATH": str(KERNEL_STANDIN), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "[[0, 2, -1]] [1] [6, 0, 9, 0]"


def test_openai_route_statistics_equal_the_native_routes(sglang_server_run):
    """``--api openai`` on the same server: no errors, the statistics come from sglext, add up to
    the counters, and equal the /generate run's request by request; the outputs are the same."""
    if "openai" not in sglang_server_run:
        pytest.skip(f"only {', '.join(OPENAI_MODES)} is also measured over /v1/completions")
    native, openai = sglang_server_run, sglang_server_run["openai"]
    records = openai["records"]
    assert openai["code"] == 0 and all(r["error"] is None for r in records)
    assert {r["engine_stats"]["source"] for r in records} == {"sglang.spec_tokens_details"}
    assert all(r["output_token_ids_source"] == "engine" for r in records)  # return_token_ids
    assert sum(_meta(r)["spec_verify_ct"] for r in records) == openai["delta"]["sglang:spec_verify_calls_total"]
    assert sum(r["output_tokens"] for r in records) == openai["delta"]["sglang:generation_tokens_total"]
    fields = ("spec_verify_ct", "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram")

    def by_key(run):
        return {(r["run_point"], r["question_id"], r["turn_index"]): (r["output_text"], [_meta(r)[f] for f in fields])
                for r in run["records"] if not r["warmup"]}

    assert by_key(openai) == by_key(native) and len(by_key(openai)) == 16


def test_k_from_the_servers_own_description(sglang_server_run):
    """Without --draft-length the client takes K from /server_info: n-gram num_draft_tokens - 1,
    a chain its steps, a tree its depth (not its nodes)."""
    from speedbench.metrics.acceptance.draft_length import server_draft_length

    mode, info = sglang_server_run["mode"], sglang_server_run["server_info"]
    assert server_draft_length(info) == K[mode], {k: v for k, v in info.items() if k.startswith("speculative")}
