"""Per-category speedup (speedbench.metrics.speedup.category_speedups) on values worked out by hand."""
from __future__ import annotations

import math

import pytest

from speedbench.metrics.speedup import category_speedups

approx = pytest.approx


def test_latency_and_decode_speedup_per_category_with_paired_intervals():
    rows = category_speedups(
        ["x", "x", "y"], ["a/0", "b/0", "c/0", "z/0"], [2.0, 4.0, 3.0, 9.0], [10.0, 20.0, 30.0, 5.0],
        ["a/0", "b/0", "c/0"], [1.0, 1.0, 1.5], [30.0, 30.0, math.nan],
        t_ar=0.02, t_sd=0.04, tokens_per_step={"x": (3.0, [2.0, 4.0])}, num_resamples=1000)
    x, y = rows
    assert (x.category, x.num_paired, y.num_paired) == ("x", 2, 1)  # z/0 has no SD request: not paired
    assert x.latency_speedup == approx(3.0)  # (2 + 4) / (1 + 1)
    assert x.decode_speedup == approx(2.0)  # mean 30 with SD over mean 15 without
    # two pairs: a resample holds (a, a), (a, b) or (b, b), each extreme with probability 1/4
    assert x.latency_speedup_ci == approx([2.0, 4.0])  # 4 / 2 and 8 / 2
    assert x.decode_speedup_ci == approx([1.5, 3.0])  # 60 / 40 and 60 / 20
    assert x.estimated_speedup == approx(1.5) and x.estimated_speedup_ci == approx([1.0, 2.0])  # 0.02 * AL / 0.04
    assert y.latency_speedup == approx(2.0) and y.latency_speedup_ci == approx([2.0, 2.0])
    assert y.decode_speedup is None and y.estimated_speedup is None  # one chunk: no decode speed; no AL given


def test_runs_without_a_shared_prompt_give_no_rows():
    assert category_speedups(["x"], ["a/0"], [1.0], [1.0], ["b/0"], [1.0], [1.0]) == []


def test_no_resamples_no_intervals():
    (row,) = category_speedups(["x"], ["a/0"], [2.0], [1.0], ["a/0"], [1.0], [2.0], num_resamples=0)
    assert row.latency_speedup == approx(2.0) and row.decode_speedup == approx(2.0)
    assert row.latency_speedup_ci is None and row.decode_speedup_ci is None
