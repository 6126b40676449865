"""The plans shipped in examples/sweep/ load, expand and pass every check (the real-deployment one
with a stand-in `vllm` program on PATH, since vLLM's own CLI is not installed here)."""
from __future__ import annotations

import os
from pathlib import Path

from speedbench.sweep import load_plan
from speedbench.sweep.units import check_units, plan_units

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweep"


def test_the_demo_plan(tmp_path, models_dir, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    plan = load_plan(EXAMPLES / "local.toml")
    assert [(v.name, v.k, v.baseline) for v in plan.variants] == [
        ("draft-k2", 2, "baseline"), ("draft-k4", 4, "baseline"), ("baseline", 0, None)]
    assert plan.tokenizer == str(models_dir)
    units = plan_units(plan, tmp_path)
    check_units(plan, units)
    assert len(units) == 9  # 3 variants x (lite_qualitative, lite_throughput_1k, random_1k)


def test_the_real_deployment_plan(tmp_path, monkeypatch):
    program = tmp_path / "bin" / "vllm"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    plan = load_plan(EXAMPLES / "vllm-eagle3.toml")
    assert [v.name for v in plan.variants] == [f"eagle3-k{k}" for k in range(1, 6)] + ["autoregressive"]
    assert '"num_speculative_tokens": 3}' in plan.variant("eagle3-k3").command
    assert "\n" not in plan.variant("eagle3-k3").command  # TOML's line-ending backslash joins the lines
    units = plan_units(plan, tmp_path)
    check_units(plan, units)
    # qualitative and random_8k once, the two throughput configs three times, for each of 6 variants
    assert len(units) == 6 * (1 + 3 + 3 + 1)
    options = units[1].options(plan, "http://127.0.0.1:1")
    assert (options.config, options.sampling.max_tokens, options.sampling.ignore_eos, options.warmup,
            options.model) == ("throughput_1k", 1024, True, 4, "llama-8b")


def test_the_local_vllm_schedule_plan(tmp_path, models_dir, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    plan = load_plan(EXAMPLES / "vllm-local-schedule.toml")
    assert [(v.name, v.k, v.baseline, v.schedule) for v in plan.variants] == [
        ("draft-k1", 1, "baseline", None), ("draft-k2", 2, "baseline", None), ("draft-k3", 3, "baseline", None),
        ("draft-k4", 4, "baseline", None), ("baseline", 0, None, None),
        ("draft-schedule", 4, "baseline", "draft-k{k}")]  # the schedule runs last
    assert "--draft-length 4 --draft-schedule {schedule}" in plan.variant("draft-schedule").command
    units = plan_units(plan, tmp_path)
    check_units(plan, units)
    assert len(units) == 6 * 2  # one workload, two repeats
