"""Appendix-G speedup: by hand, and equal to the measured speedup when per-step times are exact."""
import numpy as np
import pytest

from speedbench.metrics import (
    MetricInputError,
    TrimRules,
    acceptance_from_step_sizes,
    appendix_g_speedup,
    best_draft_length,
    estimate_speedup,
    measured_speedup,
    relative_error,
    step_latencies,
    summarize_latency,
    timings_from_lists,
)


def test_appendix_g_by_hand():
    # S = t_ar * AL / t_sd = 10 ms * 3 / 15 ms = 2
    assert appendix_g_speedup(0.010, 0.015, 3.0) == pytest.approx(2.0)
    est = estimate_speedup([0.009, 0.011], [0.014, 0.016, 0.015], 3.0, measured_speedup=1.9)
    assert (est.t_ar, est.t_sd) == (pytest.approx(0.010), pytest.approx(0.015))
    assert est.speedup_estimate == pytest.approx(2.0)
    assert est.estimate_error == pytest.approx((2.0 - 1.9) / 1.9)
    assert relative_error(2.0, 1.9) == pytest.approx(0.1 / 1.9)


@pytest.mark.parametrize("t_ar, t_sd, al", [([0.0], [0.01], 2.0), ([0.01], [-0.01], 2.0), ([0.01], [0.01], 0.5)])
def test_appendix_g_rejects_impossible_inputs(t_ar, t_sd, al):
    with pytest.raises(MetricInputError):
        estimate_speedup(t_ar, t_sd, al)


def sequential_run(chunk_sizes_per_request, step_time):
    """One request after another; every chunk (one step) takes exactly ``step_time``."""
    send, times = [], []
    clock = 0.0
    for sizes in chunk_sizes_per_request:
        send.append(clock)
        t = clock + step_time * np.arange(1, len(sizes) + 1)
        times.append(t.tolist())
        clock = float(t[-1])
    return timings_from_lists(send, times, chunk_sizes_per_request)


def test_estimate_equals_measured_when_step_times_are_exact(simulate):
    run = simulate([0.8, 0.6, 0.4], num_requests=40, steps_per_request=np.arange(40) % 7 + 10, seed=11)
    tokens = [sum(c) for c in run.chunks]
    t_ar, t_sd = 0.020, 0.031
    baseline = sequential_run([[1] * n for n in tokens], t_ar)  # autoregressive: one token per step
    speculative = sequential_run(run.chunks, t_sd)
    # AL of this run counting every chunk as a step (nothing trimmed: the timed steps are all chunks)
    keep_all = TrimRules(first_chunk="keep", last_chunk="keep")
    al = acceptance_from_step_sizes(run.chunks, draft_length=3, rules=keep_all, num_resamples=0).acceptance_length
    gaps_ar, _ = step_latencies(baseline)
    gaps_sd, _ = step_latencies(speculative)
    lat_ar = summarize_latency(baseline)
    lat_sd = summarize_latency(speculative)
    e2e_ar = [t[-1] - s for t, s in zip((baseline.chunk_times.row(i) for i in range(40)), baseline.send_times)]
    e2e_sd = [t[-1] - s for t, s in zip((speculative.chunk_times.row(i) for i in range(40)), speculative.send_times)]
    measured = measured_speedup(lat_ar.output_tps, lat_sd.output_tps, latencies_ar=e2e_ar, latencies_sd=e2e_sd)
    estimate = estimate_speedup(gaps_ar, gaps_sd, al, measured_speedup=measured.output_tps_ratio)
    assert estimate.speedup_estimate == pytest.approx(measured.output_tps_ratio, rel=1e-9)
    assert measured.latency_ratio == pytest.approx(measured.output_tps_ratio, rel=1e-9)
    assert estimate.estimate_error == pytest.approx(0.0, abs=1e-9)
    assert estimate.speedup_estimate == pytest.approx(t_ar * al / t_sd)


def test_measured_speedup_pairs_by_question_id():
    m = measured_speedup(
        100.0, 150.0, latencies_ar=[2.0, 4.0, 9.0], latencies_sd=[1.0, 2.0],
        question_ids_ar=["a", "b", "c"], question_ids_sd=["b", "a"],
    )
    # pairs: a 2.0 vs 2.0, b 4.0 vs 1.0 -> sum ratio 6/3 = 2; per-request ratios 1 and 4 -> median 2.5
    assert m.output_tps_ratio == pytest.approx(1.5)
    assert m.latency_ratio == pytest.approx(2.0)
    assert m.latency_ratio_median == pytest.approx(2.5)
    assert m.num_paired_requests == 2


def test_best_draft_length_per_batch_size():
    choice = best_draft_length(
        concurrency=[1, 1, 1, 32, 32, 32, 256, 256],
        draft_length=[0, 3, 7, 0, 3, 7, 0, 3],
        value=[50.0, 110.0, 130.0, 900.0, 1300.0, 1100.0, 5000.0, 4800.0],
    )
    assert choice.best_draft_length == {"1": 7, "32": 3, "256": 0}
    assert choice.best_value["32"] == 1300.0


def test_best_draft_length_ties_go_to_shorter_draft():
    assert best_draft_length([8, 8], [5, 3], [1.0, 1.0]).best_draft_length == {"8": 3}
