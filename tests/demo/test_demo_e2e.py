"""`speedbench demo` end to end on a tiny path: SPEED-Lite from small parent configs, the real
llama.cpp server (xllamacpp) with and without speculation, the client, the report."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq

from speedbench.cli import main
from speedbench.dataset_builder.writer import data_file


def _server_children() -> list[int]:
    """Live child processes of this test process running the engine's server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"speedbench.engine.server_process" in cmdline:
            found.append(int(entry.name))
    return found


def test_demo_small_path(tmp_path, models_dir, sources_dir, parents_writer, monkeypatch, capsys):
    """The shipped plan (examples/sweep/local.toml) on a tiny dataset: K = 2 and 4 and the baseline."""
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    dataset = parents_writer(tmp_path / "speed-bench", per_category=3, per_tier=3)
    out = tmp_path / "demo-output"
    argv = ["demo", "--sources", str(sources_dir), "--dataset", str(dataset), "--out", str(out),
            "--per-category", "1", "--per-tier", "2", "--resamples", "50", "--no-progress"]
    code = main(argv)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert _server_children() == []
    # {qualitative, throughput, random control} x {K=2, K=4, baseline}, every request answered
    configs = ("lite_qualitative", "lite_throughput_1k", "random_1k")
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == sorted(f"{v}.{c}.r1" for v in ("draft-k2", "draft-k4", "baseline") for c in configs)
    lite = {config: pq.read_table(data_file(dataset, config)).to_pylist() for config in configs}
    assert [len(lite[c]) for c in configs] == [11, 6, 2]  # 1 per category, 2 per tier, 2 random
    turns = {config: sum(len(row["turns"]) for row in rows) for config, rows in lite.items()}
    points = {"lite_qualitative": 2, "lite_throughput_1k": 3, "random_1k": 3}  # the plan: c 1,4 and 1,2,4
    for run in runs:
        records = [json.loads(line) for line in (out / "runs" / run / "records.jsonl").read_text().splitlines()]
        measured = [r for r in records if not r["warmup"]]
        config = run.split(".")[1]
        assert len(measured) == points[config] * turns[config]
        bad = [(r["record_key"], r["error"], r["output_tokens"]) for r in measured
               if r["error"] is not None or not 1 <= r["output_tokens"] <= 32]
        assert bad == [], run
        engine = json.loads((out / "runs" / run / "engine.json").read_text())
        assert (engine["speculation"], engine["draft_length"]) == (
            ("none", 0) if run.startswith("baseline") else ("draft", int(run[len("draft-k")])))
    sweep = json.loads((out / "sweep.json").read_text())["views"]
    levels = {"lite_qualitative": (1, 4), "lite_throughput_1k": (1, 2, 4), "random_1k": (1, 2, 4)}
    assert {(r["workload"], r["variant"], r["concurrency"]) for r in sweep["speedup"]} == {
        (c, v, n) for v in ("draft-k2", "draft-k4") for c in configs for n in levels[c]}
    assert {(r["workload"], r["concurrency"]) for r in sweep["best_draft_length"]} == {
        (c, n) for c in configs for n in levels[c]}
    # random-token vs real text, per variant and concurrency: random / real - 1 of the two runs' throughput
    by_run = {(r["variant"], r["dataset_config"], r["requested_concurrency"]): r["output_tps"]
              for r in json.loads((out / "report" / "report.json").read_text())["points"]
              for r in [dict(r, variant=r["run"].split(".")[0])]}
    comparison = {(r["variant"], r["concurrency"]): r["overestimate"] for r in sweep["random_vs_real"]}
    assert set(comparison) == {(v, n) for v in ("draft-k2", "draft-k4", "baseline") for n in (1, 2, 4)}
    for (variant, n), overestimate in comparison.items():
        expected = by_run[(variant, "random_1k", n)] / by_run[(variant, "lite_throughput_1k", n)] - 1
        assert abs(overestimate - expected) < 1e-12
    report = json.loads((out / "report" / "report.json").read_text())
    sd_acceptance = [r for r in report["acceptance"] if r["category"] == "all"]
    assert len(sd_acceptance) == 2 * (2 + 3 + 3) and all(1.0 <= r["acceptance_length"] <= 5.0 for r in sd_acceptance)
    assert (out / "report" / "report.html").stat().st_size > 10_000 and (out / "sweep.html").exists()
    assert "report:" in printed and "no real speedup" in printed and "best K at concurrency" in printed
    assert "lossless" in printed and "speedup draft-k4 over baseline" in printed and "random vs real text" in printed
    lite = json.loads((dataset / "manifest.json").read_text())["configs"]["lite_qualitative"]
    assert lite["stats"]["parent"]["origin"] == "dataset folder"
    # run again: everything is finished, nothing is measured twice
    before = {run: (out / "runs" / run / "records.jsonl").read_bytes() for run in runs}
    assert main(argv) == 0
    assert {run: (out / "runs" / run / "records.jsonl").read_bytes() for run in runs} == before
