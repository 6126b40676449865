"""Speedup of speculative decoding over autoregressive decoding (paper, Appendix G).

Estimate (Appendix G): ``S = t_ar * AL / t_sd``, with ``t_ar`` the mean time of one
decoding step of the baseline (1 token per step), ``t_sd`` the mean time of one
verification step with speculation (AL tokens per step on average), both measured at the
same input length and concurrency (e.g. on the Throughput split), and ``AL`` measured on
the target domain (e.g. on the Qualitative split). System cost and domain acceptance are
thereby measured separately. Since ``t_sd`` is the mean over *all* decode steps, drafted or
not, ``AL`` here is the tokens per decode step (``speedbench.metrics.acceptance.steps``:
``tokens_per_decode_step``); the AL over drafted steps (vLLM's ``mean_acceptance_length``)
overstates it whenever only some steps draft (n-gram speculation).

Measured: from a paired baseline run and SD run on the same prompts,
``output_tps_sd / output_tps_ar`` and the per-request latency ratio
``sum latency_ar / sum latency_sd`` (paired by question_id); the estimate's error is
``(S_estimate - S_measured) / S_measured``.

Per category (:func:`category_speedups`), over the requests both runs hold, paired by id:
``latency_speedup = sum latency_ar / sum latency_sd`` (llama.cpp's ``latency_speedup``, the ratio of
mean latencies over the same samples) and ``decode_speedup = mean decode_speed_sd / mean
decode_speed_ar`` with a request's decode speed ``(tokens - 1) / (t_N - t_1)`` (llama.cpp averages
the server's per-request ``predicted_per_second`` the same way), each with a paired bootstrap
interval over the category's requests; and the Appendix-G estimate ``S_c = t_ar * AL_c / t_sd``
with the point's step times and the category's tokens per decode step, its interval the AL's.

Sweeps: :func:`best_draft_length` picks, for every batch size (concurrency), the draft
length with the highest throughput; the paper finds it shrinks as the batch grows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speedbench.metrics.bootstrap import (DEFAULT_CONFIDENCE, DEFAULT_NUM_RESAMPLES, DEFAULT_SEED, align_by_id,
                                          percentile_interval, resampled_column_sums)
from speedbench.metrics.breakdown import group_codes
from speedbench.metrics.results import JsonDataclass
from speedbench.metrics.validation import MetricInputError, as_float_array


def _positive_mean(values, field: str) -> float:
    arr = as_float_array(values, field)
    if arr.size == 0:
        raise MetricInputError(f"{field}: no values")
    if (arr <= 0).any():
        i = int(np.flatnonzero(arr <= 0)[0])
        raise MetricInputError(f"{field}: step times must be > 0, got {arr[i]} at index {i}")
    return float(arr.mean())


def appendix_g_speedup(t_ar: float, t_sd: float, acceptance_length: float) -> float:
    """``S = t_ar * AL / t_sd`` (Appendix G) from mean step times and the tokens per decode step."""
    if t_ar <= 0 or t_sd <= 0:
        raise MetricInputError(f"t_ar and t_sd must be > 0 (got {t_ar}, {t_sd})")
    if not acceptance_length >= 1:
        raise MetricInputError(f"acceptance_length: must be >= 1 (one token per step at least), got {acceptance_length}")
    return float(t_ar * acceptance_length / t_sd)


def relative_error(estimate: float, measured: float) -> float:
    """``(estimate - measured) / measured``."""
    return float((estimate - measured) / measured) if measured else float("nan")


@dataclass
class SpeedupEstimate(JsonDataclass):
    """The Appendix-G estimate and, when a measured speedup is given, its error."""

    speedup_estimate: float
    t_ar: float
    t_sd: float
    acceptance_length: float
    num_ar_steps: int
    num_sd_steps: int
    measured_speedup: float | None = None
    estimate_error: float | None = None


def estimate_speedup(t_ar, t_sd, acceptance_length: float, *, measured_speedup: float | None = None) -> SpeedupEstimate:
    """Appendix-G estimate from per-step latencies ``t_ar`` (baseline) and ``t_sd`` (SD).

    ``t_ar`` and ``t_sd`` are step latencies in seconds (e.g. the step-latency samples of a
    baseline and an SD run, any number each); their means enter the formula.
    """
    mean_ar = _positive_mean(t_ar, "t_ar")
    mean_sd = _positive_mean(t_sd, "t_sd")
    al = float(acceptance_length)
    estimate = appendix_g_speedup(mean_ar, mean_sd, al)
    return SpeedupEstimate(
        speedup_estimate=estimate,
        t_ar=mean_ar,
        t_sd=mean_sd,
        acceptance_length=al,
        num_ar_steps=int(np.size(t_ar)),
        num_sd_steps=int(np.size(t_sd)),
        measured_speedup=measured_speedup,
        estimate_error=None if measured_speedup is None else relative_error(estimate, measured_speedup),
    )


@dataclass
class MeasuredSpeedup(JsonDataclass):
    """Speedup measured from a baseline run and an SD run on the same prompts."""

    output_tps_ratio: float
    latency_ratio: float | None
    latency_ratio_median: float | None
    num_paired_requests: int


def measured_speedup(
    output_tps_ar: float,
    output_tps_sd: float,
    *,
    latencies_ar=None,
    latencies_sd=None,
    question_ids_ar=None,
    question_ids_sd=None,
) -> MeasuredSpeedup:
    """Output-TPS ratio ``tps_sd / tps_ar`` and, from per-request latencies paired by
    question_id, ``sum lat_ar / sum lat_sd`` plus the median per-request ratio.

    Use the same latency in both runs (E2E, or decode time ``t_N - t_1`` to leave prefill out).
    Without ids, latencies are paired by position.
    """
    if output_tps_ar <= 0 or output_tps_sd <= 0:
        raise MetricInputError(f"output TPS must be > 0 (got {output_tps_ar}, {output_tps_sd})")
    ratio = latency_ratio = median = None
    n = 0
    if latencies_ar is not None and latencies_sd is not None:
        la = as_float_array(latencies_ar, "latencies_ar")
        ls = as_float_array(latencies_sd, "latencies_sd")
        if question_ids_ar is not None and question_ids_sd is not None:
            _, ia, ib = align_by_id(question_ids_ar, question_ids_sd)
            la, ls = la[ia], ls[ib]
        elif la.size != ls.size:
            raise MetricInputError(f"latencies: {la.size} baseline vs {ls.size} SD requests and no question_ids to pair")
        if (la <= 0).any() or (ls <= 0).any():
            raise MetricInputError("latencies must be > 0")
        n = int(la.size)
        if n:
            latency_ratio = float(la.sum() / ls.sum())
            median = float(np.median(la / ls))
    ratio = float(output_tps_sd / output_tps_ar)
    return MeasuredSpeedup(
        output_tps_ratio=ratio, latency_ratio=latency_ratio, latency_ratio_median=median, num_paired_requests=n
    )


@dataclass
class DraftLengthChoice(JsonDataclass):
    """Best draft length per concurrency from a sweep."""

    best_draft_length: dict[str, int]
    best_value: dict[str, float]
    metric: str


def best_draft_length(concurrency, draft_length, value, *, metric: str = "output_tps") -> DraftLengthChoice:
    """For each concurrency, the draft length with the highest ``value`` (e.g. output TPS or
    speedup); ties go to the shorter draft. Draft length 0 may stand for the baseline."""
    c = as_float_array(concurrency, "concurrency")
    k = as_float_array(draft_length, "draft_length")
    v = as_float_array(value, "value", allow_nan=True)
    if not (c.size == k.size == v.size):
        raise MetricInputError(f"concurrency, draft_length and value differ in length ({c.size}, {k.size}, {v.size})")
    best_k: dict[str, int] = {}
    best_v: dict[str, float] = {}
    for level in np.unique(c):
        idx = np.flatnonzero((c == level) & ~np.isnan(v))
        if idx.size == 0:
            continue
        order = idx[np.lexsort((k[idx], -v[idx]))]
        key = str(int(level)) if float(level).is_integer() else str(level)
        best_k[key] = int(k[order[0]])
        best_v[key] = float(v[order[0]])
    return DraftLengthChoice(best_draft_length=best_k, best_value=best_v, metric=metric)


@dataclass
class CategorySpeedup(JsonDataclass):
    """Speedup of one category at one load point (see the module doc), with percentile intervals."""

    category: str
    num_paired: int
    latency_speedup: float | None
    latency_speedup_ci: list[float] | None
    decode_speedup: float | None
    decode_speedup_ci: list[float] | None
    tokens_per_decode_step: float | None = None
    estimated_speedup: float | None = None
    estimated_speedup_ci: list[float] | None = None


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def _interval(bounds) -> list[float] | None:
    return None if np.isnan(bounds).any() else [float(v) for v in bounds]


def category_speedups(categories, ids_ar, latency_ar, speed_ar, ids_sd, latency_sd, speed_sd, *,
                      t_ar: float | None = None, t_sd: float | None = None,
                      tokens_per_step: dict[str, tuple[float, list[float] | None]] | None = None,
                      num_resamples: int = DEFAULT_NUM_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
                      seed: int = DEFAULT_SEED) -> list[CategorySpeedup]:
    """Measured and estimated speedup per category from a baseline and an SD run of the same prompts.

    ``categories`` / ``ids_sd`` / ``latency_sd`` / ``speed_sd`` describe the SD run's requests, the
    ``_ar`` arrays the baseline's; requests are paired by id (``question_id/turn``). A request's
    decode speed may be NaN (one chunk): its pair then counts for latency only. ``tokens_per_step``
    maps a category to the SD run's tokens per decode step and its interval, for the Appendix-G
    estimate with the point's mean step times ``t_ar`` and ``t_sd``. ``num_resamples`` 0 gives no intervals.
    """
    common, ia, ib = align_by_id(ids_ar, ids_sd)
    if common.size == 0:
        return []
    lat_a, lat_b = as_float_array(latency_ar, "latency_ar")[ia], as_float_array(latency_sd, "latency_sd")[ib]
    spd_a = as_float_array(speed_ar, "speed_ar", allow_nan=True)[ia]
    spd_b = as_float_array(speed_sd, "speed_sd", allow_nan=True)[ib]
    if (lat_a <= 0).any() or (lat_b <= 0).any():
        raise MetricInputError("latencies must be > 0")
    labels = np.asarray([str(c) for c in categories], dtype=object)[ib]
    codes, names = group_codes(labels)
    both = np.isfinite(spd_a) & np.isfinite(spd_b)
    # Columns summed per resample: latencies, and the decode speeds of the pairs that have both.
    columns = np.stack([lat_a, lat_b, np.where(both, spd_a, 0.0), np.where(both, spd_b, 0.0)], axis=1)
    latency_ci = decode_ci = np.full((len(names), 2), np.nan)
    if num_resamples > 0:  # 0: figures without intervals
        sums = resampled_column_sums(columns, num_resamples=num_resamples, seed=seed, strata=codes)
        latency_ci = percentile_interval(_ratio(sums[..., 0], sums[..., 1]), confidence)
        decode_ci = percentile_interval(_ratio(sums[..., 3], sums[..., 2]), confidence)
    out = []
    for index, name in enumerate(names):
        mine = codes == index
        totals = columns[mine].sum(axis=0)
        row = CategorySpeedup(
            category=str(name), num_paired=int(mine.sum()),
            latency_speedup=float(totals[0] / totals[1]), latency_speedup_ci=_interval(latency_ci[index]),
            decode_speedup=float(totals[3] / totals[2]) if (both & mine).any() and totals[2] > 0 else None,
            decode_speedup_ci=_interval(decode_ci[index]) if (both & mine).any() else None)
        al, al_ci = (tokens_per_step or {}).get(str(name), (None, None))
        if al is not None and t_ar and t_sd and al >= 1:
            row.tokens_per_decode_step = float(al)
            row.estimated_speedup = appendix_g_speedup(t_ar, t_sd, al)
            if al_ci and None not in al_ci:
                row.estimated_speedup_ci = [float(t_ar * v / t_sd) for v in al_ci]
        out.append(row)
    return out
