"""`speedbench sweep` end to end with the real llama.cpp server (xllamacpp): a draft at K = 2 and 4
and its no-speculation baseline on the lite configs. Every point once; the sweep's figures are
`speedbench report`'s over the same run folders; the best K per batch size is computed here by
hand from the runs' results.json files."""
from __future__ import annotations

import json
import statistics

from speedbench.cli import main
from tests.sweep.conftest import llamacpp_variants, records, running_children, write_plan

POINTS = {"lite_qualitative": ["c1", "c2"], "lite_throughput_1k": ["c1", "c2"]}


def _plan(tmp_path, dataset, models_dir) -> str:
    text = f"""
title = "sweep e2e"
tokenizer = "{models_dir}"
dataset = "{dataset}"
[run]
warmup = 1
max_tokens = 8
resamples = 50
[[workload]]
config = "lite_qualitative"
concurrency = [1, 2]
[[workload]]
config = "lite_throughput_1k"
concurrency = [1, 2]
repeats = 2
[submission]
model = "stories260K"
gpu = "cpu"
""" + llamacpp_variants()
    return str(write_plan(tmp_path, text))


def test_sweep_runs_every_point_once_and_reports_like_speedbench_report(tmp_path, lite_dataset, models_dir,
                                                                         monkeypatch, capsys):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    out = tmp_path / "sweep"
    plan = _plan(tmp_path, lite_dataset, models_dir)
    children_before = running_children()
    assert main(["sweep", plan, "--out", str(out), "--no-progress", "--resamples", "50"]) == 0, capsys.readouterr()
    expected_runs = sorted(f"{v}.{w}.r{r}" for v in ("draft-k2", "draft-k4", "baseline")
                           for w, repeats in (("lite_qualitative", 1), ("lite_throughput_1k", 2))
                           for r in range(1, repeats + 1))
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == expected_runs
    turns = {c: sum(1 + (row["question_id"] is not None and len(row["turns"]) - 1) for row in _rows(lite_dataset, c))
             for c in POINTS}
    for run in runs:
        config = run.split(".")[1]
        measured = [r for r in records(out / "runs" / run) if not r["warmup"]]
        keys = [r["record_key"] for r in measured]
        assert len(keys) == len(set(keys)) == len(POINTS[config]) * turns[config], run
        assert all(r["error"] is None for r in measured), run
    # every server stopped and gone; nothing of ours left running
    for attempt in (out / "servers").glob("*/attempt-*.json"):
        stop = json.loads(attempt.read_text())["stop"]
        assert stop["gone"] and stop["port_free"], attempt
        assert (attempt.parent / attempt.name.replace(".json", ".metrics-before.prom")).exists()
    assert running_children() - children_before == set()  # the sweep's own processes are gone
    _report_equals_speedbench_report(out, runs, tmp_path)
    _best_k_by_hand(out)
    # a second invocation finds everything done: no server starts, nothing rerun
    before = {run: (out / "runs" / run / "records.jsonl").read_bytes() for run in runs}
    assert main(["sweep", plan, "--out", str(out), "--no-progress", "--no-report"]) == 0
    assert {run: (out / "runs" / run / "records.jsonl").read_bytes() for run in runs} == before
    events = [json.loads(line)["event"] for line in (out / "state.jsonl").read_text().splitlines()]
    assert events[-1] == "invocation" and events.count("server_started") == 3
    assert sorted(p.name for p in (out / "bundles").iterdir()) == ["draft-k2.tar.gz", "draft-k4.tar.gz"]


def _rows(dataset, config):
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.writer import data_file

    return pq.read_table(data_file(dataset, config)).to_pylist()


def _report_equals_speedbench_report(out, runs, tmp_path):
    separate = tmp_path / "separate-report"
    assert main(["report", *[str(out / "runs" / r) for r in runs], "--out", str(separate), "--resamples", "50"]) == 0
    ours = json.loads((out / "report" / "report.json").read_text())
    theirs = json.loads((separate / "report.json").read_text())
    for table in ("points", "acceptance", "position_rates", "speedup", "best_draft_length", "losslessness"):
        assert _sorted(ours[table]) == _sorted(theirs[table]), table  # the order follows the runs given
    views = json.loads((out / "sweep.json").read_text())["views"]
    added = ("variant", "workload", "repeat", "baseline")  # what the sweep adds to a report row
    for row in views["speedup"]:
        assert {k: v for k, v in row.items() if k not in added} in theirs["speedup"]
    # declared pairs only: each SD run against the baseline run of the same workload and repeat
    assert {(r["sd_run"], r["baseline_run"]) for r in views["speedup"]} == {
        (f"draft-k{k}.{w}.r{n}", f"baseline.{w}.r{n}") for k in (2, 4)
        for w, repeats in (("lite_qualitative", 1), ("lite_throughput_1k", 2)) for n in range(1, repeats + 1)}
    for row in views["speedup_by_category"]:  # per category, for the declared pairs only
        assert {k: v for k, v in row.items() if k not in added} in theirs["speedup_by_category"]
    assert {r["category"] for r in views["speedup_by_category"]} >= {"low_entropy", "mixed", "high_entropy"}
    their_acceptance = theirs["acceptance"]
    for row in views["acceptance"]:
        assert {k: v for k, v in row.items() if k not in added} in their_acceptance


def _sorted(rows):
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def _best_k_by_hand(out):
    """Median output TPS over repeats per K (0 = baseline) from each run's results.json; highest wins."""
    views = json.loads((out / "sweep.json").read_text())["views"]
    values: dict[tuple, list[float]] = {}
    for run_dir in (out / "runs").iterdir():
        variant, workload, _ = run_dir.name.split(".")
        k = 0 if variant == "baseline" else int(variant.removeprefix("draft-k"))
        for point in json.loads((run_dir / "results.json").read_text())["points"]:
            values.setdefault((workload, point["requested_concurrency"], k), []).append(point["latency"]["output_tps"])
    chosen = {(r["workload"], r["concurrency"]): r for r in views["best_draft_length"]}
    assert set(chosen) == {(w, c) for w in POINTS for c in (1, 2)}
    for (workload, level), row in chosen.items():
        medians = {k: statistics.median(v) for (w, c, k), v in values.items() if (w, c) == (workload, level)}
        best = max(sorted(medians), key=lambda k: medians[k])  # ties: the smaller K
        assert row["best_draft_length"] == best and row["best_median_output_tps"] == medians[best]
        mine = values[(workload, level, best)]
        assert row["repeats"] == len(mine)
        if len(mine) == 2:  # the MAD of two values is half their distance
            assert abs(row["best_mad"] - abs(mine[0] - mine[1]) / 2) < 1e-9
            runner_up = max((k for k in medians if k != best), key=lambda k: medians[k])
            gap = medians[best] - medians[runner_up]
            spread = row["best_mad"] + abs(values[(workload, level, runner_up)][0]
                                          - values[(workload, level, runner_up)][1]) / 2
            assert row["uncertain"] is (gap <= spread)
        else:
            assert row["uncertain"] is None


def test_a_variant_given_by_url_is_measured_and_left_running(tmp_path, lite_dataset, models_dir, monkeypatch):
    from speedbench.engine import EngineConfig, LocalEngine

    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    with LocalEngine(EngineConfig(speculation="none", n_parallel=2, n_ctx_per_slot=4096)) as engine:
        plan = write_plan(tmp_path, f"""
tokenizer = "{models_dir}"
dataset = "{lite_dataset}"
[[workload]]
config = "lite_qualitative"
concurrency = [1]
max_tokens = 8
[[variant]]
name = "theirs"
engine = "llamacpp"
url = "{engine.url}"
""")
        out = tmp_path / "sweep"
        assert main(["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "20"]) == 0
        assert engine.process.poll() is None  # someone else's server: not stopped
        measured = [r for r in records(out / "runs" / "theirs.lite_qualitative.r1") if not r["warmup"]]
        assert measured and all(r["error"] is None for r in measured)
        info = json.loads((out / "servers" / "theirs" / "attempt-1.json").read_text())
        assert info["url"] == engine.url and info["stop"] == {"stopped_by_sweep": False}
        assert info["description"]["engine_version"]


def test_a_server_that_fails_to_start_is_reported_and_the_sweep_goes_on(tmp_path, lite_dataset, models_dir,
                                                                          monkeypatch, capsys):
    import shlex
    import sys

    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    broken = f"{shlex.quote(sys.executable)} -c \"import sys; sys.exit('cannot load model: out of memory')\" {{port}}"
    plan = write_plan(tmp_path, f"""
tokenizer = "{models_dir}"
dataset = "{lite_dataset}"
[[workload]]
config = "lite_qualitative"
concurrency = [1]
max_tokens = 8
[[variant]]
name = "broken"
engine = "llamacpp"
method = "draft"
k = 2
baseline = "baseline"
command = '''{broken}'''
[[variant]]
name = "baseline"
engine = "llamacpp"
command = "speedbench serve --port {{port}} --speculation none --parallel 2 --ctx-per-slot 4096"
""")
    out = tmp_path / "sweep"
    assert main(["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "20"]) == 1
    captured = capsys.readouterr()
    assert "variant 'broken': server exited with status 1" in captured.out
    assert "cannot load model: out of memory" in captured.out  # the log's last lines
    assert "broken failed" in captured.err
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["baseline.lite_qualitative.r1"]
    assert (out / "report" / "report.json").exists() and "Failures" in (out / "sweep.md").read_text()
