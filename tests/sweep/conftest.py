"""A small SPEED-Lite dataset folder and plan files for the sweep's end-to-end tests."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from speedbench.dataset_builder.registry import BuildContext, available_configs
from speedbench.dataset_builder.writer import write_dataset
from tests.demo.conftest import write_parents


@pytest.fixture(scope="module")
def lite_dataset(tmp_path_factory) -> Path:
    """lite_qualitative (1 per category, 11 rows) and lite_throughput_1k (2 per tier, 6 rows)."""
    folder = write_parents(tmp_path_factory.mktemp("sweep-data") / "speed-bench", per_category=3, per_tier=3)
    for name, options in (("lite_qualitative", {"lite_per_category": 1}), ("lite_throughput_1k", {"lite_per_tier": 2})):
        ctx = BuildContext(sources=folder, out_dir=folder, seed=0, options={**options, "allow_short": True},
                           progress=False)
        write_dataset(folder, [available_configs()[name](ctx)], {"seed": 0, "options": options})
    return folder


def write_plan(folder: Path, text: str) -> Path:
    """``folder/plan.toml`` holding ``text``, dedented."""
    path = folder / "plan.toml"
    path.write_text(textwrap.dedent(text))
    return path


def llamacpp_variants(ks: str = "[2, 4]") -> str:
    serve = "speedbench serve --port {port} --parallel 2 --ctx-per-slot 4096 --threads 1"
    return f"""
[[variant]]
name = "draft-k{{k}}"
engine = "llamacpp"
method = "draft"
k = {ks}
baseline = "baseline"
command = "{serve} --speculation draft --draft-length {{k}}"
startup_timeout_s = 120

[[variant]]
name = "baseline"
engine = "llamacpp"
command = "{serve} --speculation none"
startup_timeout_s = 120
"""


def running_children() -> set[int]:
    """Pids of this test process's live descendants. A sweep test compares the set after the sweep
    with the set before: other tests may leave session-long helpers behind (multiprocessing's
    resource tracker, a reusable worker pool) that the sweep did not start."""
    import psutil

    alive = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def records(run_dir: Path) -> list[dict]:
    path = run_dir / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def sweep_process(plan: Path, out: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "speedbench", "sweep", str(plan), "--out", str(out),
                             "--no-progress", "--no-report"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
