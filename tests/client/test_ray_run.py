"""``speedbench run --ray``: the workers as Ray actors on a local two-node Ray cluster
(``ray start`` head on 127.0.0.2, worker node on 127.0.0.3; one CPU each), against the stand-ins.

Same records as the multi-process path; one actor killed mid-run loses and duplicates nothing;
an unreachable address and a too-small cluster fail with clear messages.
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

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.ray_cluster import LocalRayCluster, cluster_env, free_port
from tests.standins.standin import Simulation, StandinServer, prompt_key
from speedbench.client.data.workload import load_conversations

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.e2e

SAME = ("question_id", "turn_index", "num_turns", "run_point", "worker", "prompt_tokens", "prompt_sha256",
        "output_tokens", "chunk_tokens", "output_token_ids", "output_text", "finish_reason", "error_kind")


@pytest.fixture(scope="module")
def cluster():
    saved = {name: os.environ.get(name) for name in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update({name: cluster_env()[name] for name in saved})
    local = LocalRayCluster(workers=1, cpus_per_node=1)
    try:
        local.start_head()
        ray.init(address=local.address, log_to_driver=False, logging_level="WARNING")
        local.start_workers()
        local.wait_for_nodes(ray)
        yield local
    finally:
        ray.shutdown()
        local.stop()
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def _cli(server, dataset: Path, out: Path, models_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "speedbench", "run", "--engine", "vllm", "--url", server.url, "--tokenizer",
            str(models_dir), "--dataset", str(dataset), "--config", "tiny", "--out", str(out), "--no-progress",
            "--resamples", "50", *extra]


def _by_key(path: Path) -> dict[str, dict]:
    records = read_jsonl(path)
    keys = [r["record_key"] for r in records]
    assert len(keys) == len(set(keys)), "a record key written twice"
    return {r["record_key"]: r for r in records}


def test_unreachable_cluster_fails_naming_the_address(tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    with StandinServer("vllm") as server:
        done = subprocess.run(_cli(server, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                                   "--ray", address, "--workers", "2"),
                              capture_output=True, text=True, timeout=120, env=cluster_env())
        assert server.received == []  # failed before any request
    assert done.returncode == 2, done.stderr
    assert f"Ray cluster at {address} is unreachable" in done.stderr
    assert not (tmp_path / "r" / "records.jsonl").exists() or not (tmp_path / "r" / "records.jsonl").read_bytes()


@pytest.mark.slow
def test_ray_workers_write_the_records_of_the_process_workers(cluster, tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(8, multiturn_every=3))
    options = ("--concurrency", "1,4", "--max-tokens", "12", "--workers", "2")
    with StandinServer("vllm", Simulation(conditional_rates=[0.8, 0.5])) as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "local", models_dir, *options) == 0
        assert run_cli("vllm", server.url, dataset, tmp_path / "ray", models_dir, *options,
                       "--ray", cluster.address) == 0
    local, remote = _by_key(tmp_path / "local" / "records.jsonl"), _by_key(tmp_path / "ray" / "records.jsonl")
    assert set(remote) == set(local) and len(local) == 2 * (8 + 2 * 2)  # 2 points x (8 rows + 2 extra turns x 2)
    for key, record in local.items():
        assert {f: remote[key][f] for f in SAME} == {f: record[f] for f in SAME}, key
    assert {r["worker"] for r in remote.values() if r["run_point"] == "c4"} == {0, 1}
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["options"]["ray"] == cluster.address and manifest["options"]["workers"] == 2
    (entry,) = manifest["clock_offsets"]
    workers = entry["workers"]
    assert sorted(w["node_ip"] for w in workers) == ["127.0.0.2", "127.0.0.3"]  # SPREAD: one per node
    for worker in workers:
        # One machine, one clock: the true offset is 0, so the NTP estimate is within its own bound.
        assert worker["same_host"] and worker["shift_ns"] == 0
        assert abs(worker["offset_ns"]) <= worker["uncertainty_ns"] and worker["probes"] == 16
        assert abs(worker["measured_shift_ns"]) <= worker["uncertainty_ns"]
        # Probed again at the end: the true drift is 0 too, so the measured one is within both bounds.
        assert abs(worker["drift_ns"]) <= worker["uncertainty_ns"] + worker["end"]["uncertainty_ns"]
        assert worker["drift_ns"] == worker["end"]["measured_shift_ns"] - worker["measured_shift_ns"]
    # The common start: each worker's first c4 request was scheduled at the same instant.
    firsts = {w: min(r["scheduled_ns"] for r in remote.values() if r["run_point"] == "c4" and r["worker"] == w)
              for w in (0, 1)}
    assert firsts[0] == firsts[1]
    results = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert [p["num_requests"] for p in results["points"]] == [12, 12]


def _wait_until(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen) -> None:
    """Until ``path`` holds ``count`` complete lines (or the driver ended)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {count} lines (driver exit code {process.poll()})")


@pytest.mark.slow
def test_killed_actor_is_rerun_without_lost_or_duplicate_records(cluster, tmp_path, models_dir, target_tokenizer):
    rows = story_rows(8)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    # Worker 1 runs rows 1, 3, 5, 7 one at a time; row 3 hangs until the test lifts the fault, so
    # the actor is killed while it holds a request and has two more rows to go.
    hang = prompt_key(target_tokenizer.encode_chat([{"role": "user", "content": rows[3].turns[0]}]))
    simulation = Simulation(conditional_rates=[0.8, 0.5], faults={hang: "hang"})
    with StandinServer("vllm", simulation) as server:
        command = _cli(server, dataset, out, models_dir, "--concurrency", "2,4", "--max-tokens", "16",
                       "--ignore-eos", "--read-timeout", "600", "--ray", cluster.address, "--workers", "2")
        driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=cluster_env(), start_new_session=True)
        try:
            _wait_for_lines(out / "records.jsonl", 5, driver)  # worker 0's four rows and worker 1's row 1
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                     if a["name"].startswith("speedbench-worker-") and a["name"].endswith("-1")]
            assert len(names) == 1, names
            server.sim.faults.clear()
            ray.kill(ray.get_actor(names[0], namespace="speedbench"))
            _, stderr = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
    assert driver.returncode == 0, stderr
    assert "Ray worker 1 lost" in stderr and "rerunning the 3 conversation(s)" in stderr
    assert "Ray worker 1 replaced" in stderr
    records = _by_key(out / "records.jsonl")
    ids = [c.question_id for c in load_conversations(dataset, "tiny", None)]
    assert set(records) == {f"c{c}/{q}/0" for c in (2, 4) for q in ids}
    assert all(r["error"] is None and r["output_tokens"] == 16 for r in records.values())
    # Row 1 came from worker 1 before it died; its unfinished rows 3, 5, 7 were rerun on worker 0.
    assert [records[f"c2/{q}/0"]["worker"] for q in ids] == [0, 1, 0, 0, 0, 0, 0, 0]
    counters = [json.loads(line) for line in (out / "counters.jsonl").read_text().splitlines()]
    assert [(c["run_point"], c["complete"]) for c in counters] == [("c2", False), ("c4", True)]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [w["worker"] for w in manifest["clock_offsets"][0]["workers"]] == [0, 1, 1]  # 1 replaced for c4


@pytest.mark.slow
def test_open_loop_keeps_the_poisson_schedule_and_a_too_small_cluster_is_refused(cluster, tmp_path, models_dir,
                                                                                capsys):
    from speedbench.client.load.shapes import poisson_offsets_ns

    dataset = write_dataset(tmp_path / "d", story_rows(6))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--request-rate", "50",
                       "--arrival-seed", "3", "--max-tokens", "8", "--ray", cluster.address, "--workers", "2") == 0
        assert run_cli("vllm", server.url, dataset, tmp_path / "big", models_dir, "--concurrency", "1",
                       "--ray", cluster.address, "--workers", "3") == 2
        assert len(server.received) == 6  # the refused run sent nothing
    assert f"Ray cluster at {cluster.address} has 2 CPUs, --workers 3 needs 3" in capsys.readouterr().err
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    assert {r["worker"] for r in records} == {0, 1} and all(r["run_point"] == "r50" for r in records)
    # One common start for both actors (same host: shift 0): scheduled times are exactly the offsets.
    scheduled = sorted(r["scheduled_ns"] for r in records)
    assert [s - scheduled[0] for s in scheduled] == sorted(poisson_offsets_ns(6, 50.0, seed=3))


@pytest.mark.slow
def test_error_budget_stops_the_ray_run_and_keeps_the_records(cluster, tmp_path, models_dir, target_tokenizer):
    rows = story_rows(6)
    failing = [prompt_key(target_tokenizer.encode_chat([{"role": "user", "content": rows[i].turns[0]}]))
               for i in (0, 1, 2)]  # rows 0 and 2 on worker 0, row 1 on worker 1
    dataset = write_dataset(tmp_path / "d", rows)
    with StandinServer("vllm", Simulation(faults={key: "http_500" for key in failing})) as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "2",
                       "--max-tokens", "8", "--max-errors", "1", "--ray", cluster.address, "--workers", "2") == 3
        sent = len(server.received)
    records = _by_key(tmp_path / "r" / "records.jsonl")
    assert len(records) == sent  # every request sent has its record
    assert sum(r["error_kind"] == "http_5xx" for r in records.values()) >= 2


@pytest.mark.slow
def test_driver_killed_then_resumed_on_ray(cluster, tmp_path, models_dir, target_tokenizer):
    rows = story_rows(10)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    # Worker 0 runs rows 0, 2, 4, 6, 8; worker 1 rows 1 and 3, then hangs on row 5: 7 records, then the kill.
    hang = prompt_key(target_tokenizer.encode_chat([{"role": "user", "content": rows[5].turns[0]}]))
    options = ("--concurrency", "2", "--max-tokens", "12", "--read-timeout", "600", "--ray", cluster.address,
               "--workers", "2")
    with StandinServer("vllm", Simulation(faults={hang: "hang"})) as server:
        driver = subprocess.Popen(_cli(server, dataset, out, models_dir, *options), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=cluster_env(), start_new_session=True)
        try:
            _wait_for_lines(out / "records.jsonl", 7, driver)
            server.sim.faults.clear()
            os.killpg(driver.pid, signal.SIGKILL)
            driver.communicate(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        assert len(read_jsonl(out / "records.jsonl")) == 7
        assert run_cli("vllm", server.url, dataset, out, models_dir, *options) == 0
    records = _by_key(out / "records.jsonl")
    ids = [c.question_id for c in load_conversations(dataset, "tiny", None)]
    assert set(records) == {f"c2/{q}/0" for q in ids} and all(r["error"] is None for r in records.values())
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["clock_offsets"]) == 2  # one entry per invocation, the first kept on resume


@pytest.mark.slow
def test_the_only_actor_killed_fails_clearly_and_the_run_resumes(cluster, tmp_path, models_dir, target_tokenizer):
    rows = story_rows(4)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    hang = prompt_key(target_tokenizer.encode_chat([{"role": "user", "content": rows[2].turns[0]}]))
    options = ("--concurrency", "1", "--max-tokens", "12", "--read-timeout", "600", "--ray", cluster.address,
               "--workers", "1")
    with StandinServer("vllm", Simulation(faults={hang: "hang"})) as server:
        driver = subprocess.Popen(_cli(server, dataset, out, models_dir, *options), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=cluster_env(), start_new_session=True)
        try:
            _wait_for_lines(out / "records.jsonl", 2, driver)  # rows 0 and 1; row 2 hangs
            (name,) = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                       if a["name"].startswith("speedbench-worker-")]
            server.sim.faults.clear()
            ray.kill(ray.get_actor(name, namespace="speedbench"))
            _, stderr = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        assert driver.returncode == 2, stderr
        assert "every Ray worker was lost at c1" in stderr and "rerun the same command to resume" in stderr
        assert len(read_jsonl(out / "records.jsonl")) == 2  # what was received is kept
        assert run_cli("vllm", server.url, dataset, out, models_dir, *options) == 0
    records = _by_key(out / "records.jsonl")
    assert len(records) == 4 and all(r["error"] is None for r in records.values())


@pytest.mark.slow
def test_a_worker_clock_beyond_the_bound_fails_before_any_request(cluster, tmp_path, models_dir, monkeypatch,
                                                                 capsys):
    from dataclasses import replace

    import speedbench.client.execution.ray_pool as ray_workers

    measured = ray_workers.estimate_clock

    def skewed(probes, same_host=False):  # as if the worker's host clock ran 250 ms ahead
        estimate = measured(probes, same_host)
        return replace(estimate, offset_ns=estimate.offset_ns + 250_000_000)

    monkeypatch.setattr(ray_workers, "estimate_clock", skewed)
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--ray", cluster.address, "--workers", "2") == 2
        assert server.received == []
    error = capsys.readouterr().err
    assert "Ray worker 0 on " in error and "wall clock +250." in error and "beyond the bound of 100 ms" in error
    assert "NTP" in error


@pytest.mark.slow
def test_measured_shifts_keep_one_common_start(cluster, tmp_path, models_dir, monkeypatch):
    """As on separate hosts: the driver takes the actors for remote, so each one's measured (non-zero)
    shift is applied to its start and to its records; the two must cancel exactly."""
    import speedbench.client.execution.ray_pool as ray_workers
    from speedbench.client.load.shapes import poisson_offsets_ns

    monkeypatch.setattr(ray_workers, "boot_id", lambda: "another-host")
    dataset = write_dataset(tmp_path / "d", story_rows(6))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--request-rate", "50",
                       "--arrival-seed", "5", "--max-tokens", "8", "--ray", cluster.address, "--workers", "2") == 0
    workers = json.loads((tmp_path / "r" / "manifest.json").read_text())["clock_offsets"][0]["workers"]
    assert all(not w["same_host"] and w["shift_ns"] == w["measured_shift_ns"] for w in workers)
    assert workers[0]["shift_ns"] != workers[1]["shift_ns"]  # two independent estimates (ns resolution)
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    assert {r["worker"] for r in records} == {0, 1}
    scheduled = sorted(r["scheduled_ns"] for r in records)
    assert [s - scheduled[0] for s in scheduled] == sorted(poisson_offsets_ns(6, 50.0, seed=5))


@pytest.mark.slow
def test_ctrl_c_stops_the_ray_run_and_it_resumes(cluster, tmp_path, models_dir, target_tokenizer):
    rows = story_rows(4)
    dataset = write_dataset(tmp_path / "d", rows)
    out = tmp_path / "r"
    hang = prompt_key(target_tokenizer.encode_chat([{"role": "user", "content": rows[3].turns[0]}]))
    options = ("--concurrency", "2", "--max-tokens", "12", "--read-timeout", "600", "--ray", cluster.address,
               "--workers", "2")
    with StandinServer("vllm", Simulation(faults={hang: "hang"})) as server:
        driver = subprocess.Popen(_cli(server, dataset, out, models_dir, *options), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=cluster_env(), start_new_session=True)
        try:
            _wait_for_lines(out / "records.jsonl", 3, driver)  # rows 0, 2 (worker 0) and 1; row 3 hangs
            server.sim.faults.clear()
            driver.send_signal(signal.SIGINT)
            _, stderr = driver.communicate(timeout=120)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        assert driver.returncode == 130 and "rerun the same command to resume" in stderr
        assert len(read_jsonl(out / "records.jsonl")) == 3
        _wait_until(lambda: not [a for a in ray.util.list_named_actors(all_namespaces=True)
                                 if a["name"].startswith("speedbench-worker-")])  # its actors are gone
        assert run_cli("vllm", server.url, dataset, out, models_dir, *options) == 0
    records = _by_key(out / "records.jsonl")
    assert len(records) == 4 and all(r["error"] is None for r in records.values())


@pytest.mark.slow
def test_a_node_with_another_speedbench_version_is_refused(cluster, tmp_path, models_dir, monkeypatch, capsys):
    import speedbench

    actual = speedbench.__version__
    monkeypatch.setattr(speedbench, "__version__", actual + ".driver")
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "r", models_dir, "--concurrency", "1",
                       "--ray", cluster.address, "--workers", "1") == 2
        assert server.received == []
    assert f"has speed-bench {actual}, the driver {actual}.driver; install the same version" in capsys.readouterr().err
