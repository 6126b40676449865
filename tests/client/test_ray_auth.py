"""``speedbench run --ray`` against a Ray cluster with token authentication (Ray 2.59+'s default):
a driver without the token, or with a wrong one, fails at once with what to set; with the
cluster's token the run goes through. The cluster is a real head (``ray start --head`` with
``RAY_AUTH_MODE=token``) on 127.0.0.2, one CPU."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.standins.fixtures import read_jsonl, story_rows, write_dataset
from tests.standins.ray_cluster import LocalRayCluster
from tests.standins.standin import StandinServer

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.e2e

TOKEN = uuid.uuid4().hex  # what the cluster was started with


@pytest.fixture(scope="module")
def token_cluster():
    local = LocalRayCluster(workers=0, cpus_per_node=1, auth_token=TOKEN)
    try:
        local.start_head()
        local.wait_for_head()
        yield local
    finally:
        local.stop()


def _run(cluster, server, dataset: Path, out: Path, models_dir: Path, **auth: str | None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update({"RAY_USAGE_STATS_ENABLED": "0", **{k: v for k, v in auth.items() if v is not None}})
    command = [sys.executable, "-m", "speedbench", "run", "--engine", "vllm", "--url", server.url, "--tokenizer",
               str(models_dir), "--dataset", str(dataset), "--config", "tiny", "--out", str(out), "--no-progress",
               "--resamples", "20", "--concurrency", "1", "--max-tokens", "8", "--ray", cluster.address,
               "--workers", "1"]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def test_a_driver_without_the_token_is_told_what_to_set(token_cluster, tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        done = _run(token_cluster, server, dataset, tmp_path / "r", models_dir, RAY_AUTH_TOKEN_PATH=None)
        assert server.received == []  # refused before any request
    assert done.returncode == 2, done.stderr
    message = done.stderr
    assert f"the Ray cluster at {token_cluster.address} uses token authentication" in message
    assert "RAY_AUTH_MODE=token" in message and "RAY_AUTH_TOKEN=<token>" in message and "docs/ray.md" in message
    assert "InvalidAuthToken" in message  # Ray's own words, kept
    assert TOKEN not in message


def test_a_wrong_token_is_named_as_refused(token_cluster, tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        done = _run(token_cluster, server, dataset, tmp_path / "r", models_dir, RAY_AUTH_MODE="token",
                    RAY_AUTH_TOKEN="not-the-token")
        assert server.received == []
    assert done.returncode == 2, done.stderr
    assert f"the Ray cluster at {token_cluster.address} refused this driver's token (from RAY_AUTH_TOKEN" \
        in done.stderr
    assert "not-the-token" not in done.stderr and TOKEN not in done.stderr


def test_with_the_clusters_token_the_run_goes_through(token_cluster, tmp_path, models_dir):
    dataset = write_dataset(tmp_path / "d", story_rows(2))
    with StandinServer("vllm") as server:
        done = _run(token_cluster, server, dataset, tmp_path / "r", models_dir, RAY_AUTH_MODE="token",
                    RAY_AUTH_TOKEN=TOKEN)
        assert len(server.received) == 2  # both prompts were sent, by the actor on the cluster
    assert done.returncode == 0, done.stderr
    records = read_jsonl(tmp_path / "r" / "records.jsonl")
    assert len(records) == 2 and all(r["error"] is None and r["output_tokens"] > 0 for r in records)
