"""Draft schedules (``--draft-schedule``): parsed, refused with the range named, written in each engine's form."""
from __future__ import annotations

import subprocess
import sys

import pytest

from speedbench.engine import EngineConfig
from speedbench.engine.draft_schedule import BatchRange, DraftSchedule, DraftScheduleError, parse_draft_schedule
from speedbench.engine.schedule_forms import engine_form, trtllm_schedule, vllm_schedule
from speedbench.engine.vllm import speculative_config


def test_a_schedule_parses_into_its_ranges():
    schedule = parse_draft_schedule("1-1:4, 2-64:1", max_k=4)
    assert schedule == DraftSchedule((BatchRange(1, 1, 4), BatchRange(2, 64, 1)))
    assert schedule.text == "1-1:4,2-64:1" and schedule.max_batch == 64 and schedule.max_k == 4
    assert [schedule.k_at(b) for b in (1, 2, 33, 64)] == [4, 1, 1, 1]
    # given out of order, read in order; K 0 (no speculation at that batch size) is allowed
    assert parse_draft_schedule("5-8:0,1-4:2").text == "1-4:2,5-8:0"


@pytest.mark.parametrize("text, message", [
    ("1-1:4,3-64:1", "range '3-64:1': gap after range '1-1:4' (batch sizes 2-2 have no K)"),
    ("1-4:4,3-64:1", "range '3-64:1' overlaps range '1-4:4' (batch size 3 is in both)"),
    ("1-1:4,2-64:5", "range '2-64:5': K = 5 is above --draft-length 4"),
    ("1-1:4,2-64:1.5", "range '2-64:1.5': K '1.5' is not an integer"),
    ("1-1.5:4", "range '1-1.5:4': end '1.5' is not an integer"),
    ("2-8:2", "range '2-8:2': the schedule must start at batch size 1 (batch sizes 1-1 have no K)"),
    ("1-8:-1", "range '1-8:-1': K = -1 is negative"),
    ("4-1:2", "range '4-1:2': the end 1 is below the start 4"),
    ("0-4:2", "range '0-4:2': batch sizes start at 1, got 0"),
    ("1:4", "range '1:4': expected LOW-HIGH:K"),
    ("1-1:4,,2-4:1", "empty range"),
])
def test_bad_schedules_are_refused_naming_the_range(text, message):
    with pytest.raises(DraftScheduleError) as caught:
        parse_draft_schedule(text, max_k=4)
    assert message in str(caught.value)


def test_vllm_form_and_the_served_speculative_config():
    schedule = parse_draft_schedule("1-1:4,2-64:1", max_k=4)
    assert vllm_schedule(schedule, 4) == {"num_speculative_tokens": 4,
                                          "num_speculative_tokens_per_batch_size": [[1, 1, 4], [2, 64, 1]]}
    config = EngineConfig(engine="vllm", speculation="draft", draft_length=4, draft_schedule="1-1:4,2-64:1")
    spec = speculative_config(config, None)
    assert spec["num_speculative_tokens"] == 4
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 1, 4], [2, 64, 1]]
    with pytest.raises(DraftScheduleError, match="K = 0 at every batch size"):
        vllm_schedule(parse_draft_schedule("1-8:0"))


def test_trtllm_form_thresholds_and_its_rule_on_batch_size_one():
    # draft_len_schedule keys are thresholds (batch size >= key); [1] must be max_draft_len, the largest
    assert trtllm_schedule(parse_draft_schedule("1-1:4,2-3:2,4-64:0")) == {
        "max_draft_len": 4, "draft_len_schedule": {1: 4, 2: 2, 4: 0}}
    with pytest.raises(DraftScheduleError, match="range '2-8:3'.*batch size 1 drafts 2"):
        trtllm_schedule(parse_draft_schedule("1-1:2,2-8:3"))
    with pytest.raises(DraftScheduleError, match="no schedule form for engine 'tgi'"):
        engine_form(parse_draft_schedule("1-1:2"), "tgi")


def test_engine_config_checks_schedule_and_p_min_against_engine():
    with pytest.raises(ValueError, match=r"--draft-schedule '1-1:4,2-8:5'.*range '2-8:5': K = 5 is above"):
        EngineConfig(engine="vllm", speculation="draft", draft_length=4, draft_schedule="1-1:4,2-8:5")
    with pytest.raises(ValueError, match="served by vLLM with speculation"):
        EngineConfig(engine="llamacpp", speculation="draft", draft_schedule="1-1:4")
    with pytest.raises(ValueError, match="served by vLLM with speculation"):
        EngineConfig(engine="vllm", speculation="none", draft_schedule="1-1:4")
    with pytest.raises(ValueError, match="--draft-p-min ends a draft model's draft early on llama.cpp"):
        EngineConfig(engine="vllm", speculation="draft", draft_p_min=0.5)
    with pytest.raises(ValueError, match=r"draft_p_min must lie in \[0, 1\], got 1.5"):
        EngineConfig(engine="llamacpp", speculation="draft", draft_p_min=1.5)
    assert EngineConfig(engine="llamacpp", speculation="draft", draft_p_min=0.8).draft_p_min == 0.8


def test_llamacpp_params_carry_p_min():
    from speedbench.engine.server_process import build_params

    config = EngineConfig(speculation="draft", draft_length=4, draft_p_min=0.75, target="t.gguf", draft="d.gguf")
    data = {**config.to_child_json(), "n_ctx": 1024}
    params = build_params(data)
    assert params.speculative.draft.p_min == pytest.approx(0.75) and params.speculative.draft.n_max == 4


def test_serve_refuses_a_bad_schedule_before_starting_anything(tmp_path):
    result = subprocess.run([sys.executable, "-m", "speedbench", "serve", "--engine", "vllm", "--draft-length", "4",
                             "--draft-schedule", "1-2:4,2-64:1", "--target", str(tmp_path / "missing.bin")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "range '2-64:1' overlaps range '1-2:4' (batch size 2 is in both)" in result.stderr
    assert "Traceback" not in result.stderr


def test_sglang_form_pins_one_candidate_step_per_batch_size_slot():
    form = engine_form(parse_draft_schedule("1-1:4,2-7:1,8-64:0"), "sglang")
    # slots keyed by the range starts; one candidate each, so the EMA has nothing to move between
    assert form == {"speculative_num_steps": 4, "speculative_adaptive": True, "speculative_adaptive_config": {
        "1": {"candidate_steps": [4]}, "2": {"candidate_steps": [1]}, "8": {"candidate_steps": [0]}}}


def test_engine_json_says_that_k_varies():
    """``describe()`` writes the schedule / p_min at engine.json's top level, where the analysis reads that K
    varied (per-position rates then null without per-step counts)."""
    from speedbench.metrics.acceptance.draft_length import declared_variable_draft_length

    scheduled = EngineConfig(engine="vllm", speculation="draft", draft_length=4, draft_schedule="1-1:4,2-64:1")
    assert scheduled.variable_depth == {"draft_schedule": "1-1:4,2-64:1", "draft_p_min": None}
    assert declared_variable_draft_length(engine_info=scheduled.variable_depth) == \
        "the engine ran a draft-length schedule (1-1:4,2-64:1)"
    shortened = EngineConfig(engine="llamacpp", speculation="draft", draft_p_min=0.9)
    assert declared_variable_draft_length(engine_info=shortened.variable_depth) == \
        "the engine ends drafts early below draft_p_min = 0.9"
    plain = EngineConfig(engine="llamacpp", speculation="draft")
    assert declared_variable_draft_length(engine_info=plain.variable_depth) is None
