"""Trimming rules, max-tokens accounting, K inference and merged-chunk detection."""
import numpy as np
import pytest

from speedbench.metrics import (
    AcceptanceWarning,
    MetricInputError,
    TrimRules,
    acceptance_from_step_sizes,
    as_ragged_counts,
    requests_from_step_sizes,
    trim_step_sizes,
)


def trimmed(rows, **rules):
    steps, report = trim_step_sizes(as_ragged_counts(rows, "step_sizes"), TrimRules(**rules))
    return [steps.row(r).tolist() for r in range(steps.num_rows)], report


def test_default_drops_lone_prefill_token_and_last_chunk():
    rows, report = trimmed([[1, 3, 2, 4, 1]])
    assert rows == [[3, 2, 4]]
    assert (report.num_first_chunks_dropped, report.num_last_chunks_dropped) == (1, 1)


def test_first_chunk_kept_when_not_lone():
    # a first chunk of 2 tokens is a real step (prefill token merged with the first step)
    assert trimmed([[2, 3, 4, 1]])[0] == [[2, 3, 4]]
    assert trimmed([[2, 3, 4, 1]], first_chunk="drop")[0] == [[3, 4]]


def test_keep_rules():
    assert trimmed([[1, 3, 2, 4, 1]], first_chunk="keep")[0] == [[1, 3, 2, 4]]
    assert trimmed([[1, 3, 2, 4, 1]], last_chunk="keep")[0] == [[3, 2, 4, 1]]
    assert trimmed([[1, 3, 2, 4, 1]], first_chunk="keep", last_chunk="keep")[0] == [[1, 3, 2, 4, 1]]


def test_zero_token_chunks_are_not_steps():
    rows, report = trimmed([[0, 1, 0, 3, 2, 0]])
    assert rows == [[3]]
    assert report.num_zero_chunks_dropped == 3
    with pytest.raises(MetricInputError, match="0 tokens at row 0, position 0"):
        trimmed([[0, 1, 3]], zero_chunks="raise")


def test_short_streams():
    # one chunk: dropped as lone first; two chunks: first lone, second last
    rows, _ = trimmed([[1], [1, 2], [], [3]])
    assert rows == [[], [], [], []]


def test_unknown_rule_is_rejected():
    with pytest.raises(MetricInputError, match="last_chunk"):
        TrimRules(last_chunk="sometimes")


def test_max_tokens_requests_counted_and_optionally_excluded():
    chunks = [[1, 4, 4, 4, 2], [1, 2, 2, 1], [1, 3, 1]]
    reasons = ["length", "stop", None]
    s = acceptance_from_step_sizes(chunks, draft_length=3, finish_reasons=reasons, num_resamples=0)
    assert (s.num_max_tokens_requests, s.max_tokens_share) == (1, pytest.approx(1 / 3))
    assert s.acceptance_length == pytest.approx(1 + (3 + 3 + 3 + 1 + 1 + 2) / 6)
    excluded = acceptance_from_step_sizes(
        chunks, draft_length=3, finish_reasons=reasons, rules=TrimRules(exclude_max_tokens_requests=True), num_resamples=0
    )
    assert excluded.num_requests == 2
    assert excluded.num_requests_excluded_max_tokens == 1
    assert excluded.acceptance_length == pytest.approx(1 + (1 + 1 + 2) / 3)


def test_merged_chunks_are_detected_and_excluded():
    with pytest.warns(AcceptanceWarning, match="merged"):
        table = requests_from_step_sizes([[1, 3, 6, 2, 1], [1, 4, 9, 1]], draft_length=3)
    report = table.trim_report
    assert report.num_merged_chunks == 2
    assert report.merged_chunk_rows == [0, 1]
    assert report.merged_chunk_share == pytest.approx(2 / 5)
    assert report.step_size_counts == {2: 1, 3: 1, 4: 1, 6: 1, 9: 1}
    # the histogram holds only the real steps 3, 2 and 4
    assert table.histograms.sum(axis=0).tolist() == [0, 1, 1, 1]


def test_merged_chunks_can_be_fatal():
    with pytest.raises(MetricInputError, match="merged"):
        requests_from_step_sizes([[1, 3, 6, 2, 1]], draft_length=3, rules=TrimRules(merged_chunks="raise"))


def test_draft_length_inferred_with_warning():
    with pytest.warns(AcceptanceWarning, match="inferred K = 3"):
        s = acceptance_from_step_sizes([[1, 3, 2, 4, 1]], num_resamples=0)
    assert s.draft_length == 3 and s.draft_length_inferred
    assert len(s.conditional_acceptance_rate) == 3


def test_each_turn_is_trimmed_on_its_own():
    table = requests_from_step_sizes([[1, 3, 1], [1, 2, 1]], draft_length=3, question_ids=["q", "q"])
    assert table.steps.tolist() == [2]
    assert np.asarray(table.histograms).tolist() == [[0, 1, 1, 0]]
