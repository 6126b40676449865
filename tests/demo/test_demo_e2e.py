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


def test_demo_small_path(tmp_path, models_dir, parents_writer, monkeypatch, capsys):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    dataset = parents_writer(tmp_path / "speed-bench", per_category=3, per_tier=3)
    out = tmp_path / "demo-output"
    code = main(["demo", "--sources", str(tmp_path), "--dataset", str(dataset), "--out", str(out), "--isl", "0",
                 "--per-category", "1", "--per-tier", "2", "--qualitative-concurrency", "1,2", "--sweep", "1,2",
                 "--qualitative-max-tokens", "8", "--throughput-max-tokens", "8", "--resamples", "50",
                 "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert _server_children() == []
    # Four runs: {qualitative, throughput} x {SD, baseline}, every request answered.
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == ["qualitative-baseline", "qualitative-sd", "throughput_1k-baseline", "throughput_1k-sd"]
    lite = {config: pq.read_table(data_file(dataset, config)).to_pylist()
            for config in ("lite_qualitative", "lite_throughput_1k")}
    assert (len(lite["lite_qualitative"]), len(lite["lite_throughput_1k"])) == (11, 6)  # 1 per category, 2 per tier
    turns = {config: sum(len(row["turns"]) for row in rows) for config, rows in lite.items()}
    for run in runs:
        records = [json.loads(line) for line in (out / "runs" / run / "records.jsonl").read_text().splitlines()]
        measured = [r for r in records if not r["warmup"]]
        config = "lite_qualitative" if run.startswith("qualitative") else "lite_throughput_1k"
        assert len(measured) == 2 * turns[config]  # two concurrency points
        bad = [(r["record_key"], r["error"], r["output_tokens"]) for r in measured
               if r["error"] is not None or not 1 <= r["output_tokens"] <= 8]
        assert bad == [], run
        engine = json.loads((out / "runs" / run / "engine.json").read_text())
        assert engine["speculation"] == ("none" if run.endswith("baseline") else "draft")
    report = json.loads((out / "report.json").read_text())
    assert {(r["dataset_config"], r["concurrency"]) for r in report["speedup"]} == {
        ("lite_qualitative", 1), ("lite_qualitative", 2), ("lite_throughput_1k", 1), ("lite_throughput_1k", 2)}
    sd_acceptance = [r for r in report["acceptance"] if r["category"] == "all"]
    assert len(sd_acceptance) == 4 and all(1.0 <= r["acceptance_length"] <= 5.0 for r in sd_acceptance)
    assert (out / "report.html").stat().st_size > 10_000 and (out / "report.md").exists()
    assert "report:" in printed and "no real speedup" in printed
    lite = json.loads((dataset / "manifest.json").read_text())["configs"]["lite_qualitative"]
    assert lite["stats"]["parent"]["origin"] == "dataset folder"
