"""Every acceptance formula against numbers computed by hand."""
import json

import numpy as np
import pytest

from speedbench.metrics import (
    MetricInputError,
    acceptance_from_step_sizes,
    acceptance_length_from_conditional,
    acceptance_length_from_counts,
    acceptance_length_from_histogram,
    acceptance_length_from_marginal,
    check_identities,
    conditional_from_marginal,
    marginal_from_conditional,
    marginal_from_histogram,
    mean_acceptance_rate,
    requests_from_counts,
    requests_from_histograms,
    summarize_acceptance,
)

# K = 3; steps (after trimming) of sizes 3,2,4 and 4,4,2 accept 2,1,3 and 3,3,1 drafts:
# h = [0, 2, 1, 3], n = 6, accepted = 13.
H = np.array([0, 2, 1, 3])


def test_marginal_by_hand():
    # P(>=1) = 6/6, P(>=2) = (1 + 3)/6, P(>=3) = 3/6
    assert marginal_from_histogram(H) == pytest.approx([1.0, 4 / 6, 3 / 6])


def test_conditional_by_hand():
    # AR_1 = 1/1, AR_2 = (4/6)/1, AR_3 = (3/6)/(4/6) = 3/4
    assert conditional_from_marginal(marginal_from_histogram(H)) == pytest.approx([1.0, 2 / 3, 3 / 4])


def test_acceptance_length_by_hand_all_forms():
    # AL = 1 + 1 + 2/3 + (2/3)(3/4) = 19/6 = 1 + 13/6
    assert acceptance_length_from_conditional([1.0, 2 / 3, 3 / 4]) == pytest.approx(19 / 6)
    assert acceptance_length_from_marginal([1.0, 4 / 6, 3 / 6]) == pytest.approx(19 / 6)
    assert acceptance_length_from_histogram(H) == pytest.approx(19 / 6)
    assert acceptance_length_from_counts(6, 13) == pytest.approx(19 / 6)
    assert marginal_from_conditional([1.0, 2 / 3, 3 / 4]) == pytest.approx([1.0, 4 / 6, 3 / 6])


def test_mean_acceptance_rate_by_hand():
    # 13 accepted of 6 steps x 3 drafted
    assert mean_acceptance_rate(13, 18) == pytest.approx(13 / 18)


def test_position_never_reached_is_zero_not_skipped():
    # h = [1, 1, 0, 0]: P(>=1) = 1/2, P(>=2) = 0, P(>=3) = 0; AR_3 = 0/0 -> 0
    marginal = marginal_from_histogram([1, 1, 0, 0])
    assert marginal == pytest.approx([0.5, 0.0, 0.0])
    assert conditional_from_marginal(marginal) == pytest.approx([0.5, 0.0, 0.0])
    # nothing ever accepted: AL = 1 and every rate 0, still K entries
    assert conditional_from_marginal(marginal_from_histogram([4, 0, 0, 0])).tolist() == [0.0, 0.0, 0.0]
    assert acceptance_length_from_histogram([4, 0, 0, 0]) == 1.0


def test_summary_from_step_sizes_by_hand():
    s = acceptance_from_step_sizes([[1, 3, 2, 4, 1], [1, 4, 4, 2, 2]], draft_length=3, num_resamples=50)
    assert s.acceptance_histogram == [0, 2, 1, 3]
    assert s.acceptance_length == pytest.approx(19 / 6)
    # per request: 1 + 6/3 = 3 and 1 + 7/3 = 10/3 -> mean 19/6 (equal steps: equal weights)
    assert s.acceptance_length_request_weighted == pytest.approx(19 / 6)
    assert s.conditional_acceptance_rate == pytest.approx([1.0, 2 / 3, 3 / 4])
    assert s.marginal_acceptance_rate == pytest.approx([1.0, 4 / 6, 3 / 6])
    assert s.mean_acceptance_rate == pytest.approx(13 / 18)
    assert (s.num_steps, s.num_accepted_tokens, s.num_draft_tokens) == (6, 13, 18)
    assert s.checks_failed == []
    json.dumps(s.to_dict(), allow_nan=False)  # JSON-safe


def test_histogram_and_counts_forms_by_hand():
    by_hist = summarize_acceptance(requests_from_histograms([[0, 1, 1, 1], [0, 1, 0, 2]]), num_resamples=0)
    assert by_hist.acceptance_length == pytest.approx(19 / 6)
    assert by_hist.acceptance_length_request_weighted == pytest.approx((3 + 10 / 3) / 2)
    by_counts = summarize_acceptance(requests_from_counts([3, 3], [6, 7], [9, 9]), num_resamples=0)
    assert by_counts.acceptance_length == pytest.approx(19 / 6)
    assert by_counts.mean_acceptance_rate == pytest.approx(13 / 18)
    assert by_counts.conditional_acceptance_rate is None  # counts carry no per-position data


def test_identity_checks_catch_broken_inputs():
    assert check_identities(19 / 6, [1.0, 4 / 6, 3 / 6], [1.0, 2 / 3, 3 / 4]) == []
    problems = check_identities(19 / 6, [0.5, 0.9, 0.1], None)
    assert any("increase" in p for p in problems)
    assert any("identity" in p for p in problems)


def test_counts_reject_more_accepted_than_drafted():
    with pytest.raises(MetricInputError, match="accepted"):
        requests_from_counts([2], [7], [6])


@pytest.mark.parametrize(
    "bad, match",
    [([[1, 2.5, 3]], r"row 0, position 1"), ([[1, 2], [3, -1]], "negative"), ([[1, float("nan")]], "integers"), ("123", "list"),
     ([[1, 2], [3, "4"]], r"'4' at row 1, position 1"), ([[1, [2]]], r"row 0, position 1")],
)
def test_step_sizes_validation(bad, match):
    with pytest.raises(MetricInputError, match=match):
        acceptance_from_step_sizes(bad, draft_length=3)


def test_integral_floats_are_accepted():
    s = acceptance_from_step_sizes([[1.0, 3.0, 2.0, 4.0, 1.0]], draft_length=3, num_resamples=0)
    assert s.acceptance_histogram == [0, 1, 1, 1]
