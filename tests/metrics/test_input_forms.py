"""The three input forms agree on data simulated from known per-position rates, and recover them."""
import numpy as np
import pytest

from speedbench.metrics import (
    acceptance_from_counters,
    acceptance_from_step_sizes,
    requests_from_counts,
    requests_from_histograms,
    summarize_acceptance,
)

TRUE_AR = np.array([0.8, 0.6, 0.5, 0.3])


@pytest.fixture(scope="module")
def run(simulate):
    return simulate(TRUE_AR, num_requests=300, steps_per_request=np.arange(300) % 40 + 20, seed=7)


@pytest.fixture(scope="module")
def forms(run):
    k = run.draft_length
    histograms = [np.bincount(a, minlength=k + 1).tolist() for a in run.accepted]
    steps = [a.size for a in run.accepted]
    accepted = [int(a.sum()) for a in run.accepted]
    all_acc = np.concatenate(run.accepted)
    per_position = [int((all_acc >= i).sum()) for i in range(1, k + 1)]
    return {
        "step_sizes": acceptance_from_step_sizes(run.chunks, draft_length=k, num_resamples=0),
        "histograms": summarize_acceptance(requests_from_histograms(histograms), num_resamples=0),
        "counts": summarize_acceptance(requests_from_counts(steps, accepted, [s * k for s in steps]), num_resamples=0),
        "counters": acceptance_from_counters([sum(steps)], [sum(steps) * k], [int(all_acc.sum())], [per_position]),
    }


def test_all_forms_give_the_same_acceptance_length(forms):
    reference = forms["step_sizes"].acceptance_length
    for name, summary in forms.items():
        assert summary.acceptance_length == pytest.approx(reference, rel=1e-12), name
        assert summary.mean_acceptance_rate == pytest.approx(forms["step_sizes"].mean_acceptance_rate, rel=1e-12), name


def test_per_request_forms_give_the_same_request_weighted_al(forms):
    reference = forms["step_sizes"].acceptance_length_request_weighted
    assert forms["histograms"].acceptance_length_request_weighted == pytest.approx(reference, rel=1e-12)
    assert forms["counts"].acceptance_length_request_weighted == pytest.approx(reference, rel=1e-12)
    assert forms["counters"].acceptance_length_request_weighted is None  # no per-request rows


def test_forms_with_positions_give_the_same_rates(forms):
    for name in ("histograms", "counters"):
        assert forms[name].marginal_acceptance_rate == pytest.approx(forms["step_sizes"].marginal_acceptance_rate)
        assert forms[name].conditional_acceptance_rate == pytest.approx(forms["step_sizes"].conditional_acceptance_rate)
        assert forms[name].checks_failed == []


def test_true_rates_recovered_within_sampling_error(forms, run):
    s = forms["step_sizes"]
    all_acc = np.concatenate(run.accepted)
    reached = np.array([(all_acc >= i - 1).sum() for i in range(1, TRUE_AR.size + 1)])
    standard_error = np.sqrt(TRUE_AR * (1 - TRUE_AR) / reached)
    assert np.all(np.abs(np.array(s.conditional_acceptance_rate) - TRUE_AR) < 4 * standard_error)
    true_al = 1 + np.cumprod(TRUE_AR).sum()
    assert s.acceptance_length == pytest.approx(true_al, abs=0.05)
    with_ci = acceptance_from_step_sizes(run.chunks, draft_length=run.draft_length, num_resamples=500)
    assert with_ci.acceptance_length_ci[0] < true_al < with_ci.acceptance_length_ci[1]


def test_counters_summed_per_category():
    # two category runs: per-position counts are marginals over the drafts of that run
    s = acceptance_from_counters([10, 10], [30, 30], [12, 6], [[6, 4, 2], [4, 2, 0]], categories=["a", "b"])
    assert s.per_category["a"]["acceptance_length"] == pytest.approx(2.2)
    assert s.per_category["b"]["conditional_acceptance_rate"] == pytest.approx([0.4, 0.5, 0.0])
    assert s.acceptance_length == pytest.approx(1 + 18 / 20)
    assert s.marginal_acceptance_rate == pytest.approx([0.5, 0.3, 0.1])
