"""Faults injected by the stand-in become per-request error records with their cause; the run
goes on; the error budget stops it; Ctrl-C and kill -9 leave only complete records; a resumed
run sends only what is missing and ends with every record exactly once.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speedbench.client.execution.phase import record_key
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import Simulation, StandinServer, prompt_key
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow

FAULTS = ["http_429", "http_500", "drop", "malformed_line", "malformed_json", "malformed_body", "hang"]
EXPECTED_KIND = {"http_429": "http_429", "http_500": "http_5xx", "drop": "connection",
                 "malformed_line": "malformed", "malformed_json": "malformed", "malformed_body": "malformed",
                 "hang": "timeout"}


def _first_turn_keys(rows, tokenizer) -> list[str]:
    return [prompt_key(tokenizer.encode_chat([{"role": "user", "content": r.turns[0]}])) for r in rows]


def test_every_fault_becomes_its_error_record(tmp_path, models_dir, target_tokenizer):
    rows = story_rows(len(FAULTS) + 3)
    keys = _first_turn_keys(rows, target_tokenizer)
    simulation = Simulation(conditional_rates=[0.7, 0.5], faults=dict(zip(keys, FAULTS)))
    with StandinServer("vllm", simulation) as server:
        dataset = write_dataset(tmp_path / "d", rows)
        code = run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "4",
                       "--max-tokens", "24", "--read-timeout", "1", "--max-errors", "100")
    assert code == 0
    records = {r["question_id"]: r for r in read_jsonl(tmp_path / "r" / "records.jsonl")}
    assert len(records) == len(rows)  # nothing lost, nothing duplicated
    for row, fault in zip(rows, FAULTS + [None] * 3):
        record = records[row.question_id]
        if fault is None:
            assert record["error"] is None and sum(record["chunk_tokens"]) == 24
        else:
            assert record["error_kind"] == EXPECTED_KIND[fault], (fault, record["error"])
            assert record["error"]
            assert record["finish_reason"] is None
    assert "429" in records[rows[0].question_id]["error"]
    point = json.loads((tmp_path / "r" / "results.json").read_text())["points"][0]
    assert point["num_errors"] == len(FAULTS)
    assert point["errors_by_kind"] == {"http_429": 1, "http_5xx": 1, "connection": 1, "malformed": 3, "timeout": 1}
    assert point["latency"]["num_requests"] == 3


def test_failed_turn_skips_the_rest_of_its_conversation(tmp_path, models_dir, target_tokenizer):
    rows = story_rows(3, multiturn_every=3)  # row 2 has three turns; its first turn fails
    faults = {_first_turn_keys(rows, target_tokenizer)[2]: "http_500"}
    with StandinServer("vllm", Simulation(faults=faults)) as server:
        dataset = write_dataset(tmp_path / "d", rows)
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "2",
                       "--max-tokens", "8") == 0
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    failed = sorted((r for r in records if r["question_id"] == rows[2].question_id), key=lambda r: r["turn_index"])
    assert [r["error_kind"] for r in failed] == ["http_5xx", "skipped_after_error", "skipped_after_error"]
    assert len(records) == 5


def test_error_budget_stops_the_run(tmp_path, models_dir, target_tokenizer, capsys):
    rows = story_rows(8)
    faults = {key: "http_500" for key in _first_turn_keys(rows, target_tokenizer)}
    with StandinServer("vllm", Simulation(faults=faults)) as server:
        dataset = write_dataset(tmp_path / "d", rows)
        code = run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--max-tokens", "8", "--max-errors", "2")
    assert code == 3
    message = capsys.readouterr().err
    assert "error budget" in message and "--max-errors 2" in message and "http_5xx" in message
    assert len(read_jsonl(tmp_path / "r" / "records.jsonl")) == 3  # the third error crossed the budget


def test_placeholder_rows_are_refused(tmp_path, models_dir, capsys):
    rows = story_rows(2) + [DatasetRow(category="qa", sub_category="x", turns=[PLACEHOLDER_PREFIX + " (hle)"],
                                       source="hle", src_id="9")]
    dataset = write_dataset(tmp_path / "d", rows)
    code = run_cli("vllm", "http://127.0.0.1:9", dataset, tmp_path / "r", models_dir)
    assert code == 2
    message = capsys.readouterr().err
    assert "placeholder" in message and "row 2" in message and "speedbench resolve" in message
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_resume_after_a_torn_write_runs_only_what_is_missing(tmp_path, models_dir):
    rows = story_rows(6, multiturn_every=3)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    with StandinServer("sglang") as server:
        assert run_cli("sglang", server.url, dataset, out, models_dir, "--concurrency", "2,3",
                       "--max-tokens", "16") == 0
        first = read_jsonl(out / "records.jsonl")
        assert len(first) == 2 * 10
        # A run killed mid-write: 7 complete lines and half of the 8th.
        lines = (out / "records.jsonl").read_bytes().split(b"\n")
        (out / "records.jsonl").write_bytes(b"\n".join(lines[:7]) + b"\n" + lines[7][:40])
        sent_before = len(server.received)
        assert run_cli("sglang", server.url, dataset, out, models_dir, "--concurrency", "2,3",
                       "--max-tokens", "16") == 0
        resent = len(server.received) - sent_before
    final = read_jsonl(out / "records.jsonl")
    keys = [r["record_key"] for r in final]
    expected = {record_key(p, r.question_id, t) for p in ("c2", "c3") for r in rows for t in range(len(r.turns))}
    assert len(keys) == len(set(keys)) and set(keys) == expected
    assert resent == len(expected) - 7
    results = json.loads((out / "results.json").read_text())
    assert [p["num_requests"] for p in results["points"]] == [10, 10]
    assert "counters_incomplete" in " ".join(results["points"][0]["flags"])


def test_resume_refuses_changed_options(tmp_path, models_dir, capsys):
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--max-tokens", "8") == 0
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--max-tokens", "9") == 2
    assert "cannot resume" in capsys.readouterr().err


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen) -> None:
    """Until `path` holds `count` complete lines (or the process ended): event-driven enough for a test."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} lines (process exit code {process.poll()})")


@pytest.mark.parametrize("how,workers", [("kill", "2"), ("interrupt", "1")])
def test_kill_or_ctrl_c_then_resume_completes_the_run(tmp_path, models_dir, how, workers):
    rows = story_rows(12)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    # Slow enough that the run is still going when we stop it.
    with StandinServer("vllm", Simulation(step_s=0.01)) as server:
        command = [sys.executable, "-m", "speedbench", "run", "--engine", "vllm", "--url", server.url,
                   "--tokenizer", str(models_dir), "--dataset", str(dataset), "--config", "tiny",
                   "--out", str(out), "--no-progress", "--concurrency", "2", "--max-tokens", "40",
                   "--workers", workers, "--resamples", "50"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            _wait_for_lines(out / "records.jsonl", 3, process)
            if how == "kill":
                os.killpg(process.pid, signal.SIGKILL)  # the CLI and its worker processes
            else:
                process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if how == "interrupt":
            assert process.returncode == 130 and b"resume" in stderr
        partial = read_jsonl(out / "records.jsonl")  # every line parses: no torn record
        assert 3 <= len(partial) < len(rows)
        assert run_cli("vllm", server.url, dataset, out, models_dir, "--concurrency", "2", "--max-tokens", "40",
                       "--workers", workers) == 0
    final = read_jsonl(out / "records.jsonl")
    keys = [r["record_key"] for r in final]
    assert len(keys) == len(set(keys)) == len(rows)
    assert all(r["error"] is None for r in final)
