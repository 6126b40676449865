"""``speedbench submit``'s own checks: a run folder it cannot read is one clear error naming the
file, and ``--dry-run`` refuses what the Space would refuse, names included."""
from __future__ import annotations

import shutil

import pytest

from speedbench.cli import main
from speedbench.leaderboard.synthetic import SimulatedEngine

FLAGS = ["--drafter", "d", "--method", "eagle3", "--gpu", "g", "--draft-length", "3", "--dry-run"]


@pytest.fixture(scope="module")
def runs(make_entry_runs):
    return make_entry_runs(SimulatedEngine(rates=(0.7, 0.6, 0.5)), seed=3100)


def test_a_manifest_that_is_not_json_is_named_not_a_traceback(runs, tmp_path, capsys):
    sd, _ = runs
    broken = shutil.copytree(sd[0], tmp_path / "qual")
    (broken / "manifest.json").write_text("{not json")
    assert main(["submit", str(broken), *FLAGS]) == 2
    assert f"{broken}/manifest.json: not valid JSON" in capsys.readouterr().err


def test_dry_run_refuses_a_look_alike_model_name_as_the_space_does(runs, known_builds_dir, monkeypatch, capsys):
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    sd, baselines = runs
    args = ["submit", *map(str, sd), "--baseline", str(baselines[0]), *FLAGS]
    assert main([*args, "--model", "meta-llama/Llama-3.3-70B-Instruct"]) == 0
    assert main([*args, "--model", "meta-llаma/Llama-3.3-70B-Instruct"]) == 1  # a Cyrillic "а"
    assert "[rule name.confusable]" in capsys.readouterr().err


def test_dry_run_names_the_config_of_each_speedup(runs, known_builds_dir, monkeypatch, capsys):
    """Two configs of one ISL bucket (a throughput config and the random-token control, both 1k)
    printed the same 'speedup 1k c=1' twice."""
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    sd, baselines = runs
    assert main(["submit", *map(str, sd), "--baseline", str(baselines[0]), *FLAGS]) == 0
    out = capsys.readouterr().out
    assert "  speedup throughput_1k c=1: " in out and "  speedup throughput_1k c=4: " in out
