"""Latency and throughput figures against hand computation."""
import json

import numpy as np
import pytest

from speedbench.metrics import (
    MetricInputError,
    distribution_stats,
    pareto_frontier,
    per_request_latency,
    summarize_latency,
    timings_from_lists,
    tpot_per_token,
)

# request 1: sent at 0.0, chunks at 0.2 (1 token), 0.3 (2), 0.5 (3)
# request 2: sent at 0.5, chunks at 0.9 (1 token), 1.0 (1)
SEND = [0.0, 0.5]
TIMES = [[0.2, 0.3, 0.5], [0.9, 1.0]]
TOKENS = [[1, 2, 3], [1, 1]]


@pytest.fixture
def summary():
    return summarize_latency(timings_from_lists(SEND, TIMES, TOKENS), requested_concurrency=2, categories=["a", "b"])


def test_per_request_by_hand():
    per = per_request_latency(timings_from_lists(SEND, TIMES, TOKENS))
    assert per.ttft == pytest.approx([0.2, 0.4])
    assert per.e2e == pytest.approx([0.5, 0.5])
    assert per.tokens.tolist() == [6, 2]
    # user TPS = (tokens - 1) / (t_N - t_1): 5 / 0.3 and 1 / 0.1
    assert per.user_tps == pytest.approx([5 / 0.3, 10.0])
    # mean TPOT after the first chunk: 0.3 s / 5 tokens, 0.1 s / 1 token
    assert per.tpot == pytest.approx([0.06, 0.1])


def test_run_figures_by_hand(summary):
    assert summary.total_output_tokens == 8
    assert summary.run_span == pytest.approx(1.0)
    assert summary.output_tps == pytest.approx(8.0)  # 8 tokens / (1.0 - 0.0)
    assert summary.achieved_concurrency == pytest.approx(1.0)  # (0.5 + 0.5) / 1.0
    assert summary.requested_concurrency == 2
    # step latencies exclude TTFT: 0.1, 0.2, 0.1
    assert summary.step_latency.count == 3
    assert summary.step_latency.mean == pytest.approx(0.4 / 3)
    # TPOT per token: 0.1/2 twice, 0.2/3 three times, 0.1/1 once -> mean 0.4 / 6
    assert summary.tpot.count == 6
    assert summary.tpot.mean == pytest.approx(0.4 / 6)
    assert summary.tokens_per_step.mean == pytest.approx(2.0)
    assert summary.per_category["a"]["output_tps"] == pytest.approx(6 / 0.5)
    json.dumps(summary.to_dict(), allow_nan=False)


def test_tpot_per_token_repeats_by_tokens():
    assert tpot_per_token([0.3, 0.1], [3, 1]).tolist() == pytest.approx([0.1, 0.1, 0.1, 0.1])


def test_distribution_stats_by_hand():
    s = distribution_stats([4.0, 1.0, 3.0, 2.0, float("nan")])
    assert s.count == 4
    assert (s.mean, s.p50, s.min, s.max) == (2.5, 2.5, 1.0, 4.0)
    assert s.std == pytest.approx(np.sqrt(1.25))
    assert s.p90 == pytest.approx(3.7)  # linear interpolation: 1 + 0.9 * 3 = 3.7 -> between 3 and 4
    assert s.p99 == pytest.approx(3.97)
    assert distribution_stats([]).mean is None


def test_littles_law_closed_loop():
    # 4 workers, each runs 5 requests of exactly 2 s back to back: 4 in flight the whole time
    send, times, tokens = [], [], []
    for worker in range(4):
        for k in range(5):
            send.append(2.0 * k)
            times.append([2.0 * k + 0.5, 2.0 * k + 2.0])
            tokens.append([1, 9])
    s = summarize_latency(timings_from_lists(send, times, tokens), requested_concurrency=4)
    assert s.achieved_concurrency == pytest.approx(4.0)
    assert s.request_throughput == pytest.approx(20 / 10.0)
    assert s.output_tps == pytest.approx(200 / 10.0)


def test_request_without_chunks_is_counted():
    s = summarize_latency(timings_from_lists([0.0, 0.0], [[0.1, 0.2], []], [[1, 1], []]))
    assert s.num_requests_without_chunks == 1
    assert s.ttft.count == 1


@pytest.mark.parametrize(
    "send, times, tokens, match",
    [
        ([0.0], [[0.2, 0.1]], [[1, 1]], "backwards"),
        ([0.5], [[0.2]], [[1]], "before its send time"),
        ([0.0], [[0.2, 0.3]], [[1]], "chunk_tokens"),
        ([0.0], [[0.2]], [[1.5]], "non-integer"),
        ([0.0, 1.0], [[0.2]], [[1]], "send_times"),
    ],
)
def test_bad_timings_rejected(send, times, tokens, match):
    with pytest.raises(MetricInputError, match=match):
        timings_from_lists(send, times, tokens)


def test_pareto_frontier_by_hand():
    # (user, output): (100, 100) (80, 600) (60, 900) (70, 500: dominated by (80, 600)) (60, 800: dominated)
    frontier = pareto_frontier([100, 80, 60, 70, 60], [100, 600, 900, 500, 800])
    assert frontier.tolist() == [2, 1, 0]
    assert pareto_frontier([1.0, np.nan], [1.0, 5.0]).tolist() == [0]


# One stream of chunks [1, 4, 3, 4] at 0.10, 0.12, 0.14, 0.16 s, then a usage-only event
# (0 new tokens) at 0.21 s, sent at 0.0. The usage event is not a step and not an arrival:
# E2E = 0.16 (not 0.21), user TPS = 11 / 0.06 = 183.3 (not 11 / 0.11 = 100).
USAGE_SEND = [0.0]
USAGE_TIMES = [[0.10, 0.12, 0.14, 0.16, 0.21]]
USAGE_TOKENS = [[1, 4, 3, 4, 0]]


def test_zero_token_chunk_is_not_a_step_nor_the_last_arrival():
    s = summarize_latency(timings_from_lists(USAGE_SEND, USAGE_TIMES, USAGE_TOKENS))
    assert s.e2e.mean == pytest.approx(0.16)
    assert s.user_tps.mean == pytest.approx(11 / 0.06)  # 183.33
    assert s.ttft.mean == pytest.approx(0.10)
    assert s.total_output_tokens == 12
    assert s.run_span == pytest.approx(0.16)
    assert s.output_tps == pytest.approx(12 / 0.16)  # 75
    # steps: gaps 0.02, 0.02, 0.02 carrying 4, 3, 4 tokens
    assert s.step_latency.count == 3
    assert s.step_latency.max == pytest.approx(0.02)
    assert s.tokens_per_step.count == 3
    assert s.tokens_per_step.mean == pytest.approx(11 / 3)
    assert s.tpot.count == 11
    assert s.tpot_request_mean.mean == pytest.approx(0.06 / 11)
    assert s.achieved_concurrency == pytest.approx(1.0)


def test_zero_token_chunks_anywhere_are_ignored():
    # a leading empty event (a role-only chunk) does not start the clock of TTFT either
    with_empty = timings_from_lists([0.0, 0.0], [[0.05, 0.1, 0.2, 0.25], [0.3]], [[0, 1, 2, 0], [0]])
    without = timings_from_lists([0.0, 0.0], [[0.1, 0.2], []], [[1, 2], []])
    a, b = summarize_latency(with_empty).to_dict(), summarize_latency(without).to_dict()
    assert a == b
    assert a["ttft"]["mean"] == pytest.approx(0.1)
    assert a["num_requests_without_chunks"] == 1
