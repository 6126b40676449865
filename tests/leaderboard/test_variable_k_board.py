"""The board with a draft length that varied: recomputed figures keep the per-step histogram and the
flag, and the K column says "dynamic 1-4" (speedbench.leaderboard.board.k_label)."""
from __future__ import annotations

import pytest

from speedbench.leaderboard.board import k_label
from speedbench.leaderboard.recompute import _summary
from tests.metrics.test_variable_draft_length import RECORDS, STEPS, _record


def test_k_label():
    assert k_label(4, {}) == "4"
    assert k_label(4, {"variable_draft_length": False, "draft_length_histogram": {"4": 9}}) == "4"
    assert k_label(4, {"variable_draft_length": True, "draft_length_histogram": {"1": 2, "2": 1, "4": 2}}) \
        == "dynamic 1-4"
    # steps without a draft (K = 0) are no draft length; a stranger's odd keys are ignored
    assert k_label(4, {"variable_draft_length": True, "draft_length_histogram": {"0": 5, "2": 1, "3": 1, "x": 1}}) \
        == "dynamic 2-3"
    assert k_label(4, {"variable_draft_length": True, "draft_length_histogram": None}) == "dynamic, max 4"
    assert k_label(None, {"variable_draft_length": True}) == "dynamic"


def test_recomputed_acceptance_keeps_per_step_draft_lengths():
    summary = _summary(RECORDS, 4, 0)
    assert summary["acceptance_source"] == "engine"
    assert summary["draft_length_histogram"] == {"1": 2, "2": 1, "4": 2} and summary["variable_draft_length"] is True
    # by hand (tests/metrics/test_variable_draft_length.py): over the steps that drafted position i
    assert summary["conditional_acceptance_rate"] == pytest.approx([4 / 5, 2 / 3, 1.0, 1.0])
    assert k_label(4, summary) == "dynamic 1-4"
    fixed = _summary([_record([(4, 4), (4, 1)], "f")], 4, 0)
    assert fixed["variable_draft_length"] is False and k_label(4, fixed) == "4"
    unknown = _summary([_record(STEPS, "u", per_step=False)], 4, 0)
    assert unknown["conditional_acceptance_rate"] is None and unknown["per_position_null_reason"]
    assert k_label(4, unknown) == "dynamic, max 4"
