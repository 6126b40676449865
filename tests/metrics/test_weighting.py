"""Step-weighted and request-weighted acceptance length differ exactly as computed by hand."""
import pytest

from speedbench.metrics import acceptance_from_step_sizes


def test_request_vs_step_weighted_by_hand():
    # request A: 2 steps of 1 token (AL_A = 1); request B: 6 steps of 4 tokens (AL_B = 4), K = 3.
    # step-weighted: (2*1 + 6*4) / 8 = 3.25; request-weighted: (1 + 4) / 2 = 2.5
    chunks = [[1, 1, 1, 1], [1, 4, 4, 4, 4, 4, 4, 2]]
    s = acceptance_from_step_sizes(chunks, draft_length=3, num_resamples=0)
    assert s.acceptance_length == pytest.approx(3.25)
    assert s.acceptance_length_request_weighted == pytest.approx(2.5)


def test_request_without_steps_is_left_out_of_request_weighting():
    # the second request has only its prefill token and one cut chunk: no step remains
    s = acceptance_from_step_sizes([[1, 3, 3, 1], [1, 2]], draft_length=3, num_resamples=0)
    assert s.num_requests == 2
    assert s.num_requests_without_steps == 1
    assert s.acceptance_length_request_weighted == pytest.approx(3.0)


def test_turns_sharing_a_question_id_are_one_request():
    # two turns of q1: steps [3] and [2, 4] pooled -> AL = 1 + (2 + 1 + 3)/3 = 3; q2: steps [2] -> 2
    s = acceptance_from_step_sizes(
        [[1, 3, 1], [1, 2, 4, 1], [1, 2, 1]],
        draft_length=3,
        question_ids=["q1", "q1", "q2"],
        num_resamples=0,
    )
    assert s.num_requests == 2
    assert s.acceptance_length == pytest.approx(1 + 7 / 4)
    assert s.acceptance_length_request_weighted == pytest.approx((3 + 2) / 2)


def test_per_category_has_the_same_keys():
    s = acceptance_from_step_sizes(
        [[1, 3, 2, 1], [1, 4, 4, 1], [1, 2, 2, 1]],
        draft_length=3,
        categories=["math", "code", "math"],
        num_resamples=20,
    )
    d = s.to_dict()
    assert set(d["per_category"]) == {"code", "math"}
    assert set(d["per_category"]["math"]) == set(d) - {"per_category"}
    assert d["per_category"]["code"]["acceptance_length"] == pytest.approx(4.0)
    # math: steps 3,2,2,2 -> 1 + 5/4
    assert d["per_category"]["math"]["acceptance_length"] == pytest.approx(2.25)
