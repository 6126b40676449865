"""The board with a draft length that varied: recomputed figures keep the per-step histogram and the
flag, and the K column says "dynamic 1-4" (speedbench.leaderboard.board.k_label)."""
from __future__ import annotations

import pytest

from speedbench.leaderboard.board import k_label
from speedbench.leaderboard.metrics_doc import BoardAcceptance
from speedbench.leaderboard.recompute import _summary
from tests.metrics.test_variable_draft_length import RECORDS, STEPS, _record


def test_k_label():
    assert k_label(4, BoardAcceptance.read({})) == "4"
    assert k_label(4, BoardAcceptance.read({"variable_draft_length": False, "draft_length_histogram": {"4": 9}})) == "4"
    assert k_label(4, BoardAcceptance.read({"variable_draft_length": True, "draft_length_histogram": {"1": 2, "2": 1, "4": 2}})) \
        == "dynamic 1-4"
    # steps without a draft (K = 0) are no draft length; a stranger's odd keys are ignored
    assert k_label(4, BoardAcceptance.read({"variable_draft_length": True, "draft_length_histogram": {"0": 5, "2": 1, "3": 1, "x": 1}})) \
        == "dynamic 2-3"
    assert k_label(4, BoardAcceptance.read({"variable_draft_length": True, "draft_length_histogram": None})) == "dynamic, max 4"
    assert k_label(None, BoardAcceptance.read({"variable_draft_length": True})) == "dynamic"


def test_recomputed_acceptance_keeps_per_step_draft_lengths():
    summary = _summary(RECORDS, 4, 0)
    assert summary["acceptance_source"] == "engine"
    assert summary["draft_length_histogram"] == {"1": 2, "2": 1, "4": 2} and summary["variable_draft_length"] is True
    # by hand (tests/metrics/test_variable_draft_length.py): over the steps that drafted position i
    assert summary["conditional_acceptance_rate"] == pytest.approx([4 / 5, 2 / 3, 1.0, 1.0])
    assert k_label(4, BoardAcceptance.read(summary)) == "dynamic 1-4"
    fixed = _summary([_record([(4, 4), (4, 1)], "f")], 4, 0)
    assert fixed["variable_draft_length"] is False and k_label(4, BoardAcceptance.read(fixed)) == "4"
    unknown = _summary([_record(STEPS, "u", per_step=False)], 4, 0)
    assert unknown["conditional_acceptance_rate"] is None and unknown["per_position_null_reason"]
    assert k_label(4, BoardAcceptance.read(unknown)) == "dynamic, max 4"


def test_the_board_row_shows_dynamic_k():
    """The K column of a rendered board row, from the stored metrics document (metrics_doc.BoardAcceptance)."""
    from speedbench.leaderboard.board import entry_row
    from tests.leaderboard.test_board_typed_metrics import META, entry

    metrics = {"acceptance": {"acceptance_length": 2.5, "variable_draft_length": True,
                              "draft_length_histogram": {"1": 172, "4": 1}}}
    row = entry_row(entry(metrics, metadata={**META, "draft_length": 4}))
    assert row["k"] == "dynamic 1-4" and row["draft_length"] == 4
    assert entry_row(entry({"acceptance": {"acceptance_length": 2.5}}, metadata={**META, "draft_length": 4}))["k"] == "4"
