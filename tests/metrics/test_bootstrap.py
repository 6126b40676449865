"""Bootstrap intervals: coverage on simulated data, determinism, paired comparison by question_id."""
import numpy as np
import pytest

from speedbench.metrics import (
    acceptance_from_step_sizes,
    align_by_id,
    compare_acceptance,
    marginal_from_conditional,
    requests_from_counts,
    requests_from_step_sizes,
    resampled_column_sums,
    summarize_acceptance,
)

BASE_AR = np.array([0.8, 0.6, 0.5])
SCALES = np.array([0.6, 0.9, 1.2])  # per-request difficulty, drawn uniformly


def simulate_heterogeneous(rng, num_requests):
    """Requests differ in difficulty; the step-weighted truth is the mean AL over difficulties."""
    scale = rng.choice(SCALES, size=num_requests)
    steps = rng.integers(5, 40, size=num_requests)
    accepted = []
    for s, n in zip(scale, steps):
        ar = np.minimum(BASE_AR * s, 1.0)
        accepted.append(int(np.cumprod(rng.random((n, ar.size)) < ar, axis=1).sum()))
    return steps, np.array(accepted)


def true_al():
    return np.mean([1 + marginal_from_conditional(np.minimum(BASE_AR * s, 1.0)).sum() for s in SCALES])


def test_ci_coverage_close_to_95_percent():
    rng = np.random.default_rng(2024)
    target = true_al()
    replicates, hits = 200, 0
    for rep in range(replicates):
        steps, accepted = simulate_heterogeneous(rng, 80)
        s = summarize_acceptance(requests_from_counts(steps, accepted, draft_length=3), num_resamples=400, seed=rep)
        low, high = s.acceptance_length_ci
        hits += low <= target <= high
    coverage = hits / replicates
    # binomial sd at 200 replicates is 1.5 points; percentile intervals under-cover slightly at n = 80
    assert 0.89 <= coverage <= 0.99, coverage


def test_same_seed_same_interval_other_seed_other_interval(simulate):
    run = simulate(BASE_AR, num_requests=50, steps_per_request=10, seed=1)
    a = acceptance_from_step_sizes(run.chunks, draft_length=3, seed=5)
    b = acceptance_from_step_sizes(run.chunks, draft_length=3, seed=5)
    c = acceptance_from_step_sizes(run.chunks, draft_length=3, seed=6)
    assert a.to_dict() == b.to_dict()
    assert a.acceptance_length_ci != c.acceptance_length_ci


def test_resampled_sums_are_multinomial_resamples():
    # each resample of 3 rows with values 1, 10, 100 sums 3 draws: every digit count adds to 3
    sums = resampled_column_sums(np.array([1.0, 10.0, 100.0]), num_resamples=200, seed=0)[:, 0, 0]
    digits = np.stack([sums % 10, (sums // 10) % 10, sums // 100], axis=1)
    assert (digits.sum(axis=1) == 3).all()
    assert sums.mean() == pytest.approx(111, rel=0.1)


def test_stratified_resampling_keeps_stratum_sizes():
    strata = np.array([0, 0, 1, 1, 1])
    counts = resampled_column_sums(np.ones(5), num_resamples=50, seed=0, strata=strata)[:, :, 0]
    assert (counts[:, 0] == 2).all() and (counts[:, 1] == 3).all()


def test_per_category_intervals_contain_their_estimate(simulate):
    run = simulate(BASE_AR, num_requests=60, steps_per_request=15, seed=3)
    cats = ["a", "b", "c"] * 20
    s = acceptance_from_step_sizes(run.chunks, draft_length=3, categories=cats, num_resamples=300)
    for name, cat in s.per_category.items():
        low, high = cat["acceptance_length_ci"]
        assert low <= cat["acceptance_length"] <= high, name
        assert len(cat["conditional_acceptance_rate_ci"]) == 3


def test_paired_difference_by_hand():
    # A: q1 AL 2, q2 AL 3; B: q2 AL 4, q1 AL 2, q3 only in B.  Request-weighted B - A = 3 - 2.5 = 0.5
    a = requests_from_step_sizes([[1, 2, 2, 1], [1, 3, 3, 1]], draft_length=3, question_ids=["q1", "q2"])
    b = requests_from_step_sizes(
        [[1, 4, 4, 1], [1, 2, 2, 1], [1, 4, 1]], draft_length=3, question_ids=["q2", "q1", "q3"]
    )
    cmp = compare_acceptance(a, b, num_resamples=500)
    rw = cmp.acceptance_length_request_weighted
    assert rw.difference == pytest.approx(0.5)
    assert (rw.num_paired, rw.num_only_a, rw.num_only_b) == (2, 0, 1)
    # a resample holds q1 twice (diff 0), q2 twice (diff 1) or one of each (0.5)
    assert 0.0 <= rw.difference_ci[0] <= 0.5 <= rw.difference_ci[1] <= 1.0
    assert cmp.acceptance_length.difference == pytest.approx(0.5)


def test_pairing_cancels_prompt_difficulty():
    # per-prompt AL varies a lot; run B is A plus a small constant gain on every prompt
    rng = np.random.default_rng(0)
    steps = np.full(200, 50)
    acc_a = rng.integers(0, 140, size=200)
    acc_b = acc_a + 5
    ids = [f"q{i}" for i in range(200)]
    a = requests_from_counts(steps, acc_a, draft_length=3, question_ids=ids)
    b = requests_from_counts(steps, acc_b, draft_length=3, question_ids=ids)
    paired = compare_acceptance(a, b, num_resamples=300).acceptance_length
    assert paired.difference == pytest.approx(0.1)
    assert paired.difference_ci == pytest.approx([0.1, 0.1])
    independent = summarize_acceptance(a, num_resamples=300).acceptance_length_ci
    assert independent[1] - independent[0] > 0.1


def test_align_rejects_duplicate_ids():
    with pytest.raises(ValueError, match="more than once"):
        align_by_id(["a", "a"], ["a"])
