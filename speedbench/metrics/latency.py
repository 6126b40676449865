"""Latency and throughput from per-request timestamps (paper Sec. 6; docs/metrics.md).

Per request: send time ``t0`` (the *scheduled* send time for open-loop loads), receive
times ``t_1..t_N`` of its N streamed chunks, and the tokens ``n_1..n_N`` in each chunk.
Chunks with no new token (usage-only or role-only events) are dropped first: they are
neither a step nor an arrival of output, as in the acceptance metrics.  The EOS token,
when the engine emits and counts it, is output like any other token (the reference
framework cuts it from the last chunk); see docs/metrics.md.

- TTFT            ``t_1 - t0``
- step latency    ``t_i - t_{i-1}`` for i >= 2 (one chunk ~ one verification step; TTFT excluded)
- TPOT per token  ``(t_i - t_{i-1}) / n_i`` for i >= 2, counted once per token (a step that
  emitted 3 tokens contributes 3 tokens of one third of its latency each)
- E2E             ``t_N - t0``
- user TPS        ``(tokens - 1) / (t_N - t_1)`` with ``tokens = sum_i n_i``
- output TPS      ``sum over requests of tokens / (max t_N - min t0)`` (run span)
- achieved concurrency (Little's law ``L = lambda W``) ``= sum E2E / run span``, to set
  next to the requested concurrency: clients silently fall short at high concurrency.

Every distribution is summarised as count / mean / std / min / p50 / p90 / p99 / max.
:func:`pareto_frontier` picks the non-dominated (user TPS, output TPS) points of a sweep.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speedbench.metrics.breakdown import per_category
from speedbench.metrics.results import JsonDataclass
from speedbench.metrics.validation import MetricInputError, Ragged, as_float_array, as_ragged_counts

PERCENTILES = (50, 90, 99)


@dataclass
class DistributionStats(JsonDataclass):
    """count, mean, std (population), min, p50, p90, p99, max of one quantity (NaNs ignored)."""

    count: int
    mean: float | None
    std: float | None
    min: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None


def distribution_stats(values) -> DistributionStats:
    """Summary statistics of ``values`` (NaN entries are ignored; ``None`` fields when empty).

    Percentiles use numpy's default linear interpolation.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    if x.size == 0:
        return DistributionStats(0, None, None, None, None, None, None, None)
    p50, p90, p99 = np.percentile(x, PERCENTILES)
    return DistributionStats(
        count=int(x.size),
        mean=float(x.mean()),
        std=float(x.std()),
        min=float(x.min()),
        p50=float(p50),
        p90=float(p90),
        p99=float(p99),
        max=float(x.max()),
    )


@dataclass(frozen=True)
class RequestTimings:
    """Timestamps of a set of requests, stored flat.

    ``chunk_times.row(r)`` are the receive times of request r's chunks (seconds, one
    monotonic clock), ``chunk_tokens`` the tokens in each, ``send_times[r]`` its send time.
    """

    send_times: np.ndarray
    chunk_times: Ragged
    chunk_tokens: Ragged

    @property
    def num_requests(self) -> int:
        return int(self.send_times.size)

    def subset(self, mask: np.ndarray) -> "RequestTimings":
        """The requests where ``mask`` is True (already validated, so no checks again)."""
        mask = np.asarray(mask, dtype=bool)
        return RequestTimings(
            send_times=self.send_times[mask],
            chunk_times=self.chunk_times.select(mask),
            chunk_tokens=self.chunk_tokens.select(mask),
        )


def _as_ragged_floats(rows, field: str) -> Ragged:
    arrays = []
    for r, row in enumerate(rows):
        try:
            arr = np.asarray(row, dtype=np.float64)
        except (TypeError, ValueError):
            raise MetricInputError(f"{field}: row {r} holds non-numeric values") from None
        if arr.ndim != 1:
            raise MetricInputError(f"{field}: row {r} is not a flat list of numbers")
        if not np.isfinite(arr).all():
            raise MetricInputError(f"{field}: row {r} holds a non-finite time")
        arrays.append(arr)
    lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(arrays) if arrays else np.zeros(0)
    return Ragged(values=values, offsets=offsets)


def _without_empty_chunks(times: Ragged, tokens: Ragged) -> tuple[Ragged, Ragged]:
    """Drop the chunks that carry 0 tokens (a usage-only event is not a step nor an arrival)."""
    keep = tokens.values > 0
    if keep.all():
        return times, tokens
    kept_per_row = np.bincount(tokens.row_index()[keep], minlength=tokens.num_rows)
    offsets = np.zeros(tokens.num_rows + 1, dtype=np.int64)
    np.cumsum(kept_per_row, out=offsets[1:])
    return Ragged(times.values[keep], offsets), Ragged(tokens.values[keep], offsets.copy())


def timings_from_lists(send_times, chunk_times, chunk_tokens) -> RequestTimings:
    """Validate and pack per-request timestamps; chunks with 0 tokens are then dropped.

    Checks: one send time per request, as many token counts as chunk times, times
    non-decreasing and not before the send time, integer token counts.
    """
    send = as_float_array(send_times, "send_times")
    times = _as_ragged_floats(chunk_times, "chunk_times")
    tokens = as_ragged_counts(chunk_tokens, "chunk_tokens")
    if times.num_rows != send.size or tokens.num_rows != send.size:
        raise MetricInputError(
            f"got {send.size} send_times, {times.num_rows} chunk_times rows, {tokens.num_rows} chunk_tokens rows"
        )
    if (times.lengths != tokens.lengths).any():
        r = int(np.flatnonzero(times.lengths != tokens.lengths)[0])
        raise MetricInputError(
            f"request {r}: {times.lengths[r]} chunk_times but {tokens.lengths[r]} chunk_tokens"
        )
    rows = times.row_index()
    if times.values.size:
        starts = times.offsets[:-1][times.lengths > 0]
        gaps = np.diff(times.values)
        not_first = np.ones(times.values.size, dtype=bool)
        not_first[starts] = False
        backwards = np.flatnonzero(not_first[1:] & (gaps < 0))
        if backwards.size:
            r = int(rows[backwards[0] + 1])
            raise MetricInputError(f"chunk_times: request {r} has times going backwards")
        early = times.values < send[rows]
        if early.any():
            r = int(rows[np.flatnonzero(early)[0]])
            raise MetricInputError(f"chunk_times: request {r} has a chunk received before its send time")
    times, tokens = _without_empty_chunks(times, tokens)
    return RequestTimings(send_times=send, chunk_times=times, chunk_tokens=tokens)


@dataclass
class PerRequestLatency(JsonDataclass):
    """Per-request figures (arrays of length R; NaN where undefined, e.g. no chunk)."""

    ttft: np.ndarray
    e2e: np.ndarray
    tokens: np.ndarray
    user_tps: np.ndarray
    tpot: np.ndarray


def per_request_latency(timings: RequestTimings) -> PerRequestLatency:
    """TTFT, E2E, tokens, user TPS ``(tokens-1)/(t_N-t_1)`` and mean TPOT ``(t_N-t_1)/(tokens-n_1)``."""
    t, k = timings.chunk_times, timings.chunk_tokens
    has = t.lengths > 0
    first = np.full(timings.num_requests, np.nan)
    last = np.full(timings.num_requests, np.nan)
    first[has] = t.values[t.offsets[:-1][has]]
    last[has] = t.values[t.offsets[1:][has] - 1]
    first_tokens = np.zeros(timings.num_requests)
    first_tokens[has] = k.values[k.offsets[:-1][has]]
    tokens = np.add.reduceat(k.values, k.offsets[:-1][has]) if has.any() else np.zeros(0)
    all_tokens = np.zeros(timings.num_requests, dtype=np.int64)
    all_tokens[has] = tokens
    decode = last - first
    with np.errstate(invalid="ignore", divide="ignore"):
        user_tps = np.where(decode > 0, (all_tokens - 1) / np.where(decode > 0, decode, 1), np.nan)
        later = all_tokens - first_tokens
        tpot = np.where(later > 0, decode / np.where(later > 0, later, 1), np.nan)
    return PerRequestLatency(
        ttft=first - timings.send_times,
        e2e=last - timings.send_times,
        tokens=all_tokens,
        user_tps=user_tps,
        tpot=tpot,
    )


def step_latencies(timings: RequestTimings) -> tuple[np.ndarray, np.ndarray]:
    """Gaps between consecutive chunks of each request (TTFT excluded) and the tokens of the later chunk."""
    t, k = timings.chunk_times, timings.chunk_tokens
    if t.values.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    gaps = np.diff(t.values)
    is_first = np.zeros(t.values.size, dtype=bool)
    is_first[t.offsets[:-1][t.lengths > 0]] = True
    later = ~is_first[1:]
    return gaps[later], k.values[1:][later]


def tpot_per_token(gaps: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """``gap_i / n_i`` repeated ``n_i`` times: the time per output token, one entry per token."""
    gaps = np.asarray(gaps, dtype=np.float64)
    tokens = np.asarray(tokens, dtype=np.int64)
    keep = tokens > 0
    return np.repeat(gaps[keep] / tokens[keep], tokens[keep])


def output_tps(total_tokens: float, run_start: float, run_end: float) -> float:
    """``total tokens / (run_end - run_start)``; NaN for an empty span."""
    span = run_end - run_start
    return float(total_tokens / span) if span > 0 else float("nan")


def achieved_concurrency(e2e, run_span: float) -> float:
    """Little's law ``L = lambda W = (N / span) * mean(E2E) = sum(E2E) / span``."""
    e2e = np.asarray(e2e, dtype=np.float64)
    e2e = e2e[~np.isnan(e2e)]
    return float(e2e.sum() / run_span) if run_span > 0 else float("nan")


@dataclass
class LatencySummary(JsonDataclass):
    """Latency and throughput of one run (one concurrency point). Times in seconds."""

    num_requests: int
    num_requests_without_chunks: int
    total_output_tokens: int
    run_span: float
    output_tps: float
    request_throughput: float
    requested_concurrency: float | None
    achieved_concurrency: float
    ttft: DistributionStats
    e2e: DistributionStats
    step_latency: DistributionStats
    tpot: DistributionStats
    tpot_request_mean: DistributionStats
    user_tps: DistributionStats
    tokens_per_request: DistributionStats
    tokens_per_step: DistributionStats
    per_category: dict[str, dict]
    # Requests left out of the step latency, TPOT and per-user speed distributions because their
    # decode reached the client in one read or a burst (speedbench.metrics.client_timing); counted elsewhere.
    num_client_lagged: int = 0


def summarize_latency(
    timings: RequestTimings,
    *,
    requested_concurrency: float | None = None,
    categories=None,
    timed=None,
) -> LatencySummary:
    """All latency/throughput figures of a run, optionally split by category.

    ``timed`` (one bool per request, default all True) marks the requests whose chunk times are
    the engine's: the others (client-lagged: their decode reached the client in one read or a burst) count in
    the tokens, throughput, TTFT and E2E (measured from the scheduled send, they include the
    client's own lateness by design) but not in the decode-time distributions (step latency, TPOT,
    per-user speed), which they would fill with zeros."""
    per = per_request_latency(timings)
    mask = np.ones(timings.num_requests, dtype=bool) if timed is None else np.asarray(timed, dtype=bool)
    if mask.size != timings.num_requests:
        raise MetricInputError(f"timed: got {mask.size} flags for {timings.num_requests} requests")
    timed_per = per if mask.all() else per_request_latency(timings.subset(mask))
    gaps, gap_tokens = step_latencies(timings if mask.all() else timings.subset(mask))
    has = timings.chunk_times.lengths > 0
    start = float(timings.send_times.min()) if timings.num_requests else float("nan")
    end = float(np.nanmax(per.e2e + timings.send_times)) if has.any() else float("nan")
    span = end - start if has.any() else float("nan")
    total = int(per.tokens.sum())
    breakdown = {}
    if categories is not None:
        cats = np.asarray([str(c) for c in categories], dtype=object)
        if cats.size != timings.num_requests:
            raise MetricInputError(f"categories: got {cats.size} labels for {timings.num_requests} requests")
        breakdown = per_category(
            cats, lambda m: _without_breakdown(summarize_latency(timings.subset(m), requested_concurrency=None,
                                                                 timed=mask[m]))
        )
    return LatencySummary(
        num_requests=timings.num_requests,
        num_requests_without_chunks=int((~has).sum()),
        total_output_tokens=total,
        run_span=span,
        output_tps=output_tps(total, start, end) if has.any() else float("nan"),
        request_throughput=float(has.sum() / span) if has.any() and span > 0 else float("nan"),
        requested_concurrency=requested_concurrency,
        achieved_concurrency=achieved_concurrency(per.e2e, span) if has.any() else float("nan"),
        ttft=distribution_stats(per.ttft),
        e2e=distribution_stats(per.e2e),
        step_latency=distribution_stats(gaps),
        tpot=distribution_stats(tpot_per_token(gaps, gap_tokens)),
        tpot_request_mean=distribution_stats(timed_per.tpot),
        user_tps=distribution_stats(timed_per.user_tps),
        tokens_per_request=distribution_stats(per.tokens[has]),
        tokens_per_step=distribution_stats(gap_tokens),
        per_category=breakdown,
        num_client_lagged=int((~mask).sum()),
    )


def _without_breakdown(summary: LatencySummary) -> dict:
    d = summary.to_dict()
    d.pop("per_category")
    return d


def pareto_frontier(user_tps, output_tps) -> np.ndarray:
    """Indices of the points not dominated in (user TPS, output TPS), by increasing user TPS.

    A point is dominated when another is at least as good on both axes and better on one.
    NaN points are never on the frontier.
    """
    u = np.asarray(user_tps, dtype=np.float64)
    o = np.asarray(output_tps, dtype=np.float64)
    if u.shape != o.shape:
        raise MetricInputError(f"user_tps and output_tps differ in length ({u.size} vs {o.size})")
    ok = np.flatnonzero(~(np.isnan(u) | np.isnan(o)))
    # sweep from the highest user TPS down, keeping points that raise the best output TPS so far
    order = ok[np.lexsort((-o[ok], -u[ok]))]
    frontier = []
    best = -np.inf
    for i in order:
        if o[i] > best:
            frontier.append(i)
            best = o[i]
    return np.asarray(frontier[::-1], dtype=np.int64)
