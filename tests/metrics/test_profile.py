"""The speculation profile's pure parts on hand-computed histograms: rates, the AL identity, null rates
where K varied, the drafts a max_tokens cap leaves."""
from __future__ import annotations

import pytest

from speedbench.metrics.profile import StepGroup, build_profile, capped_draft_tokens, group_figures, k_variation, rates


def test_rates_by_hand():
    # h = (2, 1, 1, 4) over 8 steps, K = 3: P(>=1) = 6/8, P(>=2) = 5/8, P(>=3) = 4/8; AL = 1 + (1 + 2 + 12) / 8
    conditional, marginal, al = rates([2, 1, 1, 4])
    assert marginal == pytest.approx([0.75, 0.625, 0.5])
    assert conditional == pytest.approx([0.75, 0.625 / 0.75, 0.5 / 0.625])
    assert al == pytest.approx(1 + 15 / 8) == pytest.approx(1 + sum(marginal))


def test_profile_fields_and_validation():
    group = StepGroup(histogram=[2, 1, 1, 4], acceptance_length=2.875, acceptance_length_per_request=3.0, k_varied=None)
    profile = build_profile(group, {"coding": group}, 3, method="draft_model", draft_checkpoint=None,
                            target_model={"id": "org/model"}, measurement_conditions={})
    assert profile["schema_version"] == "1.0" and profile["num_speculative_tokens"] == 3
    assert profile["verification_method"] == "longest_prefix" and profile["accept_length_model"] == "chain_analytic"
    assert profile["acceptance_length_histogram"] == {"1": 2, "2": 1, "3": 1, "4": 4}
    assert profile["mean_accept_length"] == pytest.approx(2.875)
    assert profile["mean_accept_length_per_request"] == 3.0
    assert profile["validation"]["mean_consistency"]["passed"] is True
    assert profile["validation"]["mean_consistency"]["abs_delta"] == pytest.approx(0.0)
    assert profile["per_category"]["coding"]["marginal_accept_rates"] == pytest.approx([0.75, 0.625, 0.5])


def test_varied_k_gives_null_rates_with_the_reason():
    reason = k_variation([12, 10], [12, 12])
    assert k_variation([13], [12]) is None  # more drafts than S x K: records that contradict themselves, not a varied K
    assert reason and "1 of 2" in reason and "10 tokens where a fixed K drafts 12" in reason
    figures = group_figures(StepGroup([2, 1, 1, 4], 2.9, 3.0, reason))
    assert figures["marginal_accept_rates"] is None and figures["conditional_accept_rates"] is None
    assert figures["rates_unavailable_reason"] == reason and figures["mean_accept_length"] == 2.9
    assert k_variation([12, 12], [12, 12]) is None
    assert "does not report" in k_variation([None], [12])


def test_capped_draft_tokens_by_hand():
    # max_tokens 10, K = 4: prefill 1 token; steps before which 1, 6, 8, 9 tokens are out: drafts 4, 3, 1, 0
    assert capped_draft_tokens([1, 5, 2, 1, 1], 4, 10) == 4 + 3 + 1 + 0
    assert capped_draft_tokens([1], 4, 10) == 0
