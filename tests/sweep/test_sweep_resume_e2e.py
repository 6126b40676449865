"""An interrupted sweep loses nothing and reruns nothing: SIGINT, SIGTERM and SIGKILL of the sweep,
and a server killed mid-run, each followed by the same command, with the real llama.cpp server.

Each interruption waits (on the records file, not on a clock) until the running unit has written
measured records, then strikes. At the end every request-turn has exactly one record, none
failed, and every record written before an interruption is still there byte for byte."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import psutil

from tests.sweep.conftest import llamacpp_variants, sweep_process, write_plan

WAIT_S = 300  # an upper bound for a busy machine, never a measurement


def _plan(tmp_path, dataset, models_dir):
    text = f"""
tokenizer = "{models_dir}"
dataset = "{dataset}"
[run]
max_tokens = 96
ignore_eos = true
[[workload]]
config = "lite_qualitative"
concurrency = [1, 2]
[[workload]]
config = "lite_throughput_1k"
concurrency = [1]
""" + llamacpp_variants("[3]")
    return write_plan(tmp_path, text)


def _measured_lines(out) -> dict[str, list[bytes]]:
    lines = {}
    for path in sorted((out / "runs").glob("*/records.jsonl")):
        lines[path.parent.name] = [line for line in path.read_bytes().splitlines() if b'"warmup":false' in line]
    return lines


def _events(out) -> list[dict]:
    path = out / "state.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] if path.exists() else []


def _wait_for_new_records(process: subprocess.Popen, out, before: int, more: int = 3) -> None:
    """Until the sweep has written ``more`` measured records beyond ``before`` in total."""
    deadline = psutil.time.monotonic() + WAIT_S
    while _total(out) < before + more:
        assert process.poll() is None, process.communicate()[0]
        assert psutil.time.monotonic() < deadline, "the sweep wrote no records"
        try:
            process.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass


def _running_server(out) -> dict:
    started = [e for e in _events(out) if e["event"] == "server_started"]
    return started[-1]


def _gone(event: dict) -> bool:
    try:
        process = psutil.Process(event["pid"])
        if abs(process.create_time() - event["create_time"]) >= 0.01:
            return True
        process.wait(timeout=60)  # the kernel's parent-death signal, or the sweep's stop, ends it
    except psutil.NoSuchProcess:
        return True
    return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def _total(out) -> int:
    return sum(len(v) for v in _measured_lines(out).values())


def _all_lines(out) -> set[bytes]:
    return {line for lines in _measured_lines(out).values() for line in lines}


def test_interrupted_three_ways_then_resumed_with_nothing_lost_or_rerun(tmp_path, lite_dataset, models_dir):
    env = {**os.environ, "SPEEDBENCH_MODELS": str(models_dir)}
    plan, out = _plan(tmp_path, lite_dataset, models_dir), tmp_path / "sweep"
    kept: set[bytes] = set()

    # 1. Ctrl-C, then SIGTERM (a batch system's stop, handled as Ctrl-C): the sweep stops its server,
    # sets interrupted requests aside, exits 130
    for stop in (signal.SIGINT, signal.SIGTERM):
        process = sweep_process(plan, out, env)
        _wait_for_new_records(process, out, _total(out))
        process.send_signal(stop)
        output = process.communicate(timeout=WAIT_S)[0]
        assert process.returncode == 130, output
        assert _gone(_running_server(out))
        kept |= _all_lines(out)

    # 2. SIGKILL of the sweep: its server goes too (parent-death signal); the next run reaps anyway
    process = sweep_process(plan, out, env)
    _wait_for_new_records(process, out, _total(out))
    process.kill()
    process.communicate(timeout=WAIT_S)
    assert _gone(_running_server(out))
    kept |= {line for line in _all_lines(out) if b'"error":null' in line}

    # 3. the server killed mid-run: reported with its log, failed requests set aside, next variant runs
    process = sweep_process(plan, out, env)
    _wait_for_new_records(process, out, _total(out))
    victim = _running_server(out)
    os.killpg(victim["pid"], signal.SIGKILL)
    output = process.communicate(timeout=WAIT_S)[0]
    assert process.returncode == 1, output
    assert f"variant {victim['variant']!r}: the server died" in output and "last lines of the server log" in output
    died = [e for e in _events(out) if e["event"] == "server_died"]
    assert died and died[-1]["variant"] == victim["variant"]
    kept |= _all_lines(out)

    # 4. the same command again: only what is missing runs
    process = sweep_process(plan, out, env)
    output = process.communicate(timeout=WAIT_S)[0]
    assert process.returncode == 0, output

    final = _measured_lines(out)
    assert sorted(final) == ["baseline.lite_qualitative.r1", "baseline.lite_throughput_1k.r1",
                             "draft-k3.lite_qualitative.r1", "draft-k3.lite_throughput_1k.r1"]
    points = {"lite_qualitative": 2, "lite_throughput_1k": 1}
    rows = {"lite_qualitative": 11, "lite_throughput_1k": 6}
    for run, lines in final.items():
        records = [json.loads(line) for line in lines]
        keys = [r["record_key"] for r in records]
        assert len(keys) == len(set(keys)), run  # nothing ran twice
        assert [(r["record_key"], r["error_kind"], r["error"]) for r in records if r["error"]] == [], run  # nothing failed is kept
        config = run.split(".")[1]
        turns = {(r["question_id"], r["turn_index"]) for r in records}
        assert len(keys) == points[config] * len(turns) and len({q for q, _ in turns}) == rows[config], run
    assert {line for line in kept if b'"error":null' in line} <= _all_lines(out)  # nothing measured was lost
    for dropped in (out / "runs").glob("*/records.dropped.jsonl"):  # set aside: only failed requests
        assert all(json.loads(line)["error"] for line in dropped.read_text().splitlines())
    assert all(_gone(e) for e in _events(out) if e["event"] == "server_started")
