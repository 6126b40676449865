"""Acceptance of draft tokens: histogram, per-position rates and acceptance length (AL).

Notation (paper, Sec. 6 "Metrics"; engine-wire-formats.md): K = draft length, a
*step* = one verification forward pass, which emits ``1 + j`` tokens when it accepted
``j`` of the K draft tokens (0 <= j <= K). ``h_j`` = number of steps that accepted exactly
``j`` draft tokens, ``n = sum_j h_j``.

- marginal       ``P(>= i) = sum_{j >= i} h_j / n``                      (i = 1..K)
- conditional    ``AR_i = P(>= i) / P(>= i-1)``, ``P(>= 0) = 1``; a position that is
  never reached has rate 0 (it is probability mass 0, never skipped)
- acceptance length ``AL = 1 + sum_{i=1..K} prod_{j<=i} AR_j = 1 + sum_i P(>= i)
  = 1 + sum_j j h_j / n = 1 + accepted / steps`` (the 1 is the token the target always emits)
- mean acceptance rate ``accepted / drafted`` (= (AL - 1) / K for fixed K)

*Step-weighted* AL pools all steps of all requests (``1 + sum accepted / sum steps``);
*request-weighted* AL is the mean of per-request ALs (what the published reference
reports). They differ whenever long requests accept differently from short ones.

Inputs come in three forms (engines differ, see engine-wire-formats.md), each turned
into one :class:`RequestAcceptance` table (one row per request):

1. streamed chunk sizes per request -> :func:`requests_from_step_sizes`
   (trimming rules in :class:`TrimRules`; a step larger than K+1 is a merged chunk);
2. per-request histograms ``h_0..h_K`` -> :func:`requests_from_histograms`, or
   ``(steps, accepted, drafted)`` counts -> :func:`requests_from_counts`;
3. run-level counter deltas -> :func:`acceptance_from_counters` (no per-request rows, so
   no request-weighted AL and no CI).

:func:`summarize_acceptance` computes every figure with seeded bootstrap CIs overall and
per category; :func:`compare_acceptance` pairs two runs by ``question_id``.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from speedbench.metrics.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_NUM_RESAMPLES,
    DEFAULT_SEED,
    PairedDifference,
    paired_difference,
    percentile_interval,
    resampled_column_sums,
)
from speedbench.metrics.breakdown import group_codes
from speedbench.metrics.results import JsonDataclass, to_jsonable
from speedbench.metrics.validation import (
    MetricInputError,
    Ragged,
    as_count_array,
    as_labels,
    as_ragged_counts,
)

ALL_CATEGORY = "all"
MAX_TOKENS_REASONS = frozenset({"length", "max_tokens"})


class AcceptanceWarning(UserWarning):
    """Something in the acceptance input needs attention (inferred K, merged chunks, ...)."""


# ---------------------------------------------------------------------------------------
# Formulas on histograms and rates (pure, vectorised over leading axes)
# ---------------------------------------------------------------------------------------


def marginal_from_histogram(histogram: np.ndarray) -> np.ndarray:
    """``P(>= i) = sum_{j>=i} h_j / n`` for i = 1..K, from ``h_0..h_K`` on the last axis.

    Returns zeros where ``n = 0``.
    """
    h = np.asarray(histogram, dtype=np.float64)
    n = h.sum(axis=-1, keepdims=True)
    tail = np.flip(np.cumsum(np.flip(h, axis=-1), axis=-1), axis=-1)[..., 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, tail / np.where(n > 0, n, 1), 0.0)


def conditional_from_marginal(marginal: np.ndarray) -> np.ndarray:
    """``AR_i = P(>= i) / P(>= i-1)`` with ``P(>= 0) = 1``; 0 where position i-1 was never reached."""
    m = np.asarray(marginal, dtype=np.float64)
    prev = np.concatenate([np.ones(m.shape[:-1] + (1,)), m[..., :-1]], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prev > 0, m / np.where(prev > 0, prev, 1), 0.0)


def marginal_from_conditional(conditional: np.ndarray) -> np.ndarray:
    """``P(>= i) = prod_{j<=i} AR_j``."""
    return np.cumprod(np.asarray(conditional, dtype=np.float64), axis=-1)


def acceptance_length_from_conditional(conditional: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_{i=1..K} prod_{j<=i} AR_j`` (paper, Sec. 6)."""
    return 1.0 + marginal_from_conditional(conditional).sum(axis=-1)


def acceptance_length_from_marginal(marginal: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_{i=1..K} P(>= i)``."""
    return 1.0 + np.asarray(marginal, dtype=np.float64).sum(axis=-1)


def acceptance_length_from_histogram(histogram: np.ndarray) -> np.ndarray:
    """``AL = 1 + sum_j j h_j / sum_j h_j`` (mean step size); NaN where there are no steps."""
    h = np.asarray(histogram, dtype=np.float64)
    n = h.sum(axis=-1)
    accepted = (h * np.arange(h.shape[-1])).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 + accepted / n


def acceptance_length_from_counts(steps, accepted) -> np.ndarray:
    """``AL = 1 + accepted / steps``; NaN where steps = 0."""
    s = np.asarray(steps, dtype=np.float64)
    a = np.asarray(accepted, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 + a / s


def mean_acceptance_rate(accepted, drafted) -> np.ndarray:
    """``accepted / drafted`` (draft tokens accepted over draft tokens proposed); NaN where drafted = 0."""
    a = np.asarray(accepted, dtype=np.float64)
    d = np.asarray(drafted, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return a / d


def check_identities(acceptance_length: float, marginal, conditional, *, tolerance: float = 1e-9) -> list[str]:
    """The checks built into every summary; returns the violated ones as messages.

    - marginals ``P(>= i)`` are non-increasing in i and lie in [0, 1];
    - ``AL == 1 + sum_i P(>= i)``;
    - ``AL == 1 + sum_i prod_{j<=i} AR_j``.
    """
    problems: list[str] = []
    if marginal is None:
        return problems
    m = np.asarray(marginal, dtype=np.float64)
    if m.size and ((m < -tolerance).any() or (m > 1 + tolerance).any()):
        problems.append(f"marginal acceptance rates outside [0, 1]: {np.round(m, 6).tolist()}")
    if m.size > 1 and (np.diff(m) > tolerance).any():
        problems.append(f"marginal acceptance rates increase with position: {np.round(m, 6).tolist()}")
    if np.isfinite(acceptance_length):
        from_marginal = float(acceptance_length_from_marginal(m))
        if abs(from_marginal - acceptance_length) > max(tolerance, 1e-9 * acceptance_length):
            problems.append(
                f"AL identity broken: AL = {acceptance_length:.6f} but 1 + sum P(>=i) = {from_marginal:.6f}"
            )
        if conditional is not None:
            from_conditional = float(acceptance_length_from_conditional(conditional))
            if abs(from_conditional - acceptance_length) > max(1e-6, 1e-6 * acceptance_length):
                problems.append(
                    f"AL identity broken: AL = {acceptance_length:.6f} but "
                    f"1 + sum prod AR = {from_conditional:.6f}"
                )
    return problems


# ---------------------------------------------------------------------------------------
# Step sizes: trimming, K, merged chunks, histograms
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrimRules:
    """Which streamed chunks count as verification steps. Defaults follow the later
    revisions of the reference framework.

    Attributes:
        first_chunk: ``"drop_if_lone"`` (default) drops the first chunk when it holds exactly
            one token, the token prefill emits before any speculation; ``"drop"`` always
            drops it; ``"keep"`` counts it as a step.
        last_chunk: ``"drop"`` (default) drops the last chunk of every stream, which is cut
            short by EOS or ``max_tokens`` and so understates acceptance; ``"keep"`` counts it.
        exclude_max_tokens_requests: drop requests that finished at ``max_tokens``
            (``finish_reason`` ``"length"``) entirely (default False: they are counted, and
            their number and share are reported either way).
        merged_chunks: what to do with a step larger than K+1 tokens, which can only be
            several steps merged into one chunk by the engine or a lagging client:
            ``"exclude"`` (default: left out of the histogram, counted and warned about) or
            ``"raise"``.
        zero_chunks: chunks with 0 new tokens (usage-only or empty events) are not steps;
            ``"drop"`` (default) removes them before the other rules, ``"raise"`` rejects them.
    """

    first_chunk: Literal["drop_if_lone", "drop", "keep"] = "drop_if_lone"
    last_chunk: Literal["drop", "keep"] = "drop"
    exclude_max_tokens_requests: bool = False
    merged_chunks: Literal["exclude", "raise"] = "exclude"
    zero_chunks: Literal["drop", "raise"] = "drop"

    def __post_init__(self):
        allowed = {
            "first_chunk": ("drop_if_lone", "drop", "keep"),
            "last_chunk": ("drop", "keep"),
            "merged_chunks": ("exclude", "raise"),
            "zero_chunks": ("drop", "raise"),
        }
        for name, options in allowed.items():
            if getattr(self, name) not in options:
                raise MetricInputError(f"TrimRules.{name}: {getattr(self, name)!r} is not one of {options}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrimReport(JsonDataclass):
    """What the trimming did, so that no chunk disappears silently."""

    num_chunks: int = 0
    num_zero_chunks_dropped: int = 0
    num_first_chunks_dropped: int = 0
    num_last_chunks_dropped: int = 0
    num_merged_chunks: int = 0
    merged_chunk_share: float = 0.0
    merged_chunk_rows: list[int] = field(default_factory=list)
    step_size_counts: dict[int, int] = field(default_factory=dict)


def trim_step_sizes(chunks: Ragged, rules: TrimRules = TrimRules()) -> tuple[Ragged, TrimReport]:
    """Apply :class:`TrimRules` (zero chunks, first chunk, last chunk) to streamed chunk sizes.

    Each row is one stream (one turn of a request). Returns the remaining step sizes and
    a :class:`TrimReport`. Merged chunks are handled later, once K is known.
    """
    report = TrimReport(num_chunks=int(chunks.values.size))
    values, offsets = chunks.values, chunks.offsets
    rows = chunks.row_index()
    keep = np.ones(values.size, dtype=bool)
    zero = values == 0
    if zero.any():
        if rules.zero_chunks == "raise":
            i = int(np.flatnonzero(zero)[0])
            raise MetricInputError(f"step_sizes: chunk with 0 tokens at row {rows[i]}, position {i - offsets[rows[i]]}")
        keep &= ~zero
        report.num_zero_chunks_dropped = int(zero.sum())
    # positions of the first and last kept chunk of every row
    kept_idx = np.flatnonzero(keep)
    kept_rows = rows[kept_idx]
    counts = np.bincount(kept_rows, minlength=chunks.num_rows)
    has = counts > 0
    starts = np.zeros(chunks.num_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    first = kept_idx[starts[:-1][has]]
    last = kept_idx[starts[1:][has] - 1]
    if rules.first_chunk != "keep":
        drop_first = first if rules.first_chunk == "drop" else first[values[first] == 1]
        keep[drop_first] = False
        report.num_first_chunks_dropped = int(drop_first.size)
    if rules.last_chunk == "drop":
        drop_last = last[keep[last]]
        keep[drop_last] = False
        report.num_last_chunks_dropped = int(drop_last.size)
    new_counts = np.bincount(rows[keep], minlength=chunks.num_rows)
    new_offsets = np.zeros(chunks.num_rows + 1, dtype=np.int64)
    np.cumsum(new_counts, out=new_offsets[1:])
    trimmed = Ragged(values=values[keep], offsets=new_offsets)
    size_counts = np.bincount(trimmed.values) if trimmed.values.size else np.zeros(0, dtype=np.int64)
    report.step_size_counts = {int(s): int(size_counts[s]) for s in np.flatnonzero(size_counts)}
    return trimmed, report


def infer_draft_length(step_sizes: np.ndarray) -> int:
    """K inferred as (largest step size - 1), with a warning: merged chunks then go unseen."""
    values = np.asarray(step_sizes)
    k = int(values.max()) - 1 if values.size else 0
    warnings.warn(
        f"draft_length not given: inferred K = {k} from the largest step (max step size - 1); "
        "merged chunks cannot be detected without the true K",
        AcceptanceWarning,
        stacklevel=3,
    )
    return max(k, 0)


def detect_merged_chunks(steps: Ragged, draft_length: int) -> np.ndarray:
    """Boolean mask over the flat steps: ``True`` where a step exceeds K+1 tokens.

    One verification step can emit at most K+1 tokens, so a larger chunk is several steps
    coalesced by the engine's streamer or a client that could not keep up.
    """
    return steps.values > draft_length + 1


def histograms_from_steps(steps: Ragged, draft_length: int, valid: np.ndarray | None = None) -> np.ndarray:
    """Per-row histogram ``h_0..h_K`` (row r, column j = steps of row r of size j+1).

    ``valid`` optionally masks steps out (merged chunks). Steps must be in 1..K+1.
    """
    values = steps.values
    rows = steps.row_index()
    if valid is not None:
        values, rows = values[valid], rows[valid]
    width = draft_length + 1
    if values.size and (values.min() < 1 or values.max() > width):
        raise MetricInputError(f"step sizes must lie in 1..K+1 = 1..{width} (got {values.min()}..{values.max()})")
    flat = np.bincount(rows * width + (values - 1), minlength=steps.num_rows * width)
    return flat.reshape(steps.num_rows, width)


# ---------------------------------------------------------------------------------------
# The per-request table and its builders (input forms 1 and 2)
# ---------------------------------------------------------------------------------------


@dataclass
class RequestAcceptance:
    """One row per request: the counts every acceptance figure is computed from.

    ``histograms`` is ``None`` for the ``(steps, accepted, drafted)`` form, which carries no
    per-position information.
    """

    question_ids: np.ndarray
    categories: np.ndarray
    steps: np.ndarray
    accepted: np.ndarray
    drafted: np.ndarray
    histograms: np.ndarray | None
    draft_length: int | None
    draft_length_inferred: bool = False
    max_tokens_finished: np.ndarray | None = None
    input_form: str = "step_sizes"
    trim_rules: TrimRules | None = None
    trim_report: TrimReport | None = None
    warnings: list[str] = field(default_factory=list)
    num_requests_excluded_max_tokens: int = 0

    @property
    def num_requests(self) -> int:
        return int(self.steps.size)


def _max_tokens_mask(finish_reasons, n: int) -> np.ndarray | None:
    if finish_reasons is None:
        return None
    if isinstance(finish_reasons, (str, bytes)) or len(finish_reasons) != n:
        raise MetricInputError(f"finish_reasons: expected one entry per row ({n})")
    out = np.zeros(n, dtype=bool)
    for i, reason in enumerate(finish_reasons):
        if isinstance(reason, (bool, np.bool_)):
            out[i] = bool(reason)
        elif reason is not None:
            out[i] = str(reason).lower() in MAX_TOKENS_REASONS
    return out


def _group_rows(question_ids, categories, n: int, columns: dict[str, np.ndarray]):
    """Sum rows that share a question_id (the turns of one request)."""
    cats = as_labels(categories, n, "categories", default=ALL_CATEGORY)
    if question_ids is None:  # every row its own request
        return np.asarray([str(i) for i in range(n)], dtype=object), cats, columns
    ids = as_labels(question_ids, n, "question_ids", default="")
    uniq, first, inverse = np.unique(ids.astype(str), return_index=True, return_inverse=True)
    if uniq.size == n:
        return ids, cats, columns
    order = np.argsort(first)  # keep first-appearance order
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    inverse = remap[inverse]
    group_cats = cats[first[order]]
    if (cats != group_cats[inverse]).any():
        i = int(np.flatnonzero(cats != group_cats[inverse])[0])
        raise MetricInputError(f"categories: rows of question_id {ids[i]!r} disagree on the category (row {i})")
    grouped = {}
    for name, col in columns.items():
        if col is None:
            grouped[name] = None
        elif col.dtype == bool:
            grouped[name] = np.bincount(inverse, weights=col, minlength=order.size) > 0
        elif col.ndim == 1:
            grouped[name] = np.bincount(inverse, weights=col, minlength=order.size).astype(col.dtype)
        else:
            acc = np.zeros((order.size,) + col.shape[1:], dtype=col.dtype)
            np.add.at(acc, inverse, col)
            grouped[name] = acc
    return ids[first[order]], group_cats, grouped


def _finish_table(table: RequestAcceptance, rules: TrimRules | None) -> RequestAcceptance:
    mask = table.max_tokens_finished
    if rules is not None and rules.exclude_max_tokens_requests and mask is not None and mask.any():
        keep = ~mask
        table.num_requests_excluded_max_tokens = int(mask.sum())
        for name in ("question_ids", "categories", "steps", "accepted", "drafted", "histograms"):
            col = getattr(table, name)
            if col is not None:
                setattr(table, name, col[keep])
        table.max_tokens_finished = mask[keep]
    return table


def requests_from_step_sizes(
    step_sizes,
    *,
    draft_length: int | None = None,
    categories=None,
    question_ids=None,
    finish_reasons=None,
    rules: TrimRules = TrimRules(),
) -> RequestAcceptance:
    """Input form 1: the token count of every streamed chunk of every stream, first chunk included.

    Rows that share a ``question_id`` are the turns of one request and are pooled (each turn
    is trimmed on its own). ``finish_reasons`` (``"length"`` = stopped at ``max_tokens``)
    lets the summary report, or with ``rules.exclude_max_tokens_requests`` drop, capped
    requests. Without ``draft_length``, K = max step - 1 with a warning.
    """
    chunks = as_ragged_counts(step_sizes, "step_sizes")
    n = chunks.num_rows
    steps, report = trim_step_sizes(chunks, rules)
    notes: list[str] = []
    inferred = draft_length is None
    if inferred:
        draft_length = infer_draft_length(steps.values)
        notes.append(f"draft_length inferred as {draft_length} (max step size - 1)")
    else:
        draft_length = int(as_count_array(draft_length, "draft_length")[0])
        if draft_length < 1:
            raise MetricInputError(f"draft_length: must be >= 1, got {draft_length}")
    merged = detect_merged_chunks(steps, draft_length)
    if merged.any():
        rows = np.unique(steps.row_index()[merged])
        report.num_merged_chunks = int(merged.sum())
        report.merged_chunk_share = float(merged.mean())
        report.merged_chunk_rows = rows[:100].tolist()
        message = (
            f"{report.num_merged_chunks} chunk(s) larger than K+1 = {draft_length + 1} tokens in "
            f"{rows.size} stream(s) (first rows: {rows[:5].tolist()}): merged chunks, not steps; "
            "excluded from the histogram"
        )
        if rules.merged_chunks == "raise":
            raise MetricInputError("step_sizes: " + message)
        warnings.warn(message, AcceptanceWarning, stacklevel=2)
        notes.append(message)
    histograms = histograms_from_steps(steps, draft_length, valid=~merged)
    step_counts = histograms.sum(axis=1)
    accepted = histograms @ np.arange(draft_length + 1)
    ids, cats, cols = _group_rows(
        question_ids,
        categories,
        n,
        {
            "steps": step_counts,
            "accepted": accepted,
            "histograms": histograms,
            "max_tokens": _max_tokens_mask(finish_reasons, n),
        },
    )
    table = RequestAcceptance(
        question_ids=ids,
        categories=cats,
        steps=cols["steps"],
        accepted=cols["accepted"],
        drafted=cols["steps"] * draft_length,
        histograms=cols["histograms"],
        draft_length=draft_length,
        draft_length_inferred=inferred,
        max_tokens_finished=cols["max_tokens"],
        input_form="step_sizes",
        trim_rules=rules,
        trim_report=report,
        warnings=notes,
    )
    return _finish_table(table, rules)


def requests_from_histograms(
    histograms,
    *,
    categories=None,
    question_ids=None,
    finish_reasons=None,
    exclude_max_tokens_requests: bool = False,
) -> RequestAcceptance:
    """Input form 2a: an engine's per-request histogram ``h_0..h_K`` (e.g. vLLM's
    ``acceptance_histogram``, SGLang's ``spec_correct_drafts_histogram``). K = length - 1;
    shorter rows are padded with zeros (a position never reached)."""
    rows = as_ragged_counts(histograms, "histograms")
    n = rows.num_rows
    width = int(rows.lengths.max()) if n else 1
    if width < 2:
        raise MetricInputError("histograms: each histogram needs h_0..h_K with K >= 1 (at least 2 entries)")
    dense = np.zeros((n, width), dtype=np.int64)
    dense[rows.row_index(), np.arange(rows.values.size) - np.repeat(rows.offsets[:-1], rows.lengths)] = rows.values
    k = width - 1
    notes = []
    if n and (rows.lengths != width).any():
        notes.append(f"histograms of different lengths: padded with zeros to K = {k}")
    ids, cats, cols = _group_rows(
        question_ids,
        categories,
        n,
        {"histograms": dense, "max_tokens": _max_tokens_mask(finish_reasons, n)},
    )
    h = cols["histograms"]
    steps = h.sum(axis=1)
    table = RequestAcceptance(
        question_ids=ids,
        categories=cats,
        steps=steps,
        accepted=h @ np.arange(width),
        drafted=steps * k,
        histograms=h,
        draft_length=k,
        max_tokens_finished=cols["max_tokens"],
        input_form="histograms",
        warnings=notes,
    )
    return _finish_table(table, TrimRules(exclude_max_tokens_requests=exclude_max_tokens_requests))


def requests_from_counts(
    steps,
    accepted,
    drafted=None,
    *,
    draft_length: int | None = None,
    categories=None,
    question_ids=None,
    finish_reasons=None,
    exclude_max_tokens_requests: bool = False,
) -> RequestAcceptance:
    """Input form 2b: per-request ``(steps, accepted, drafted)`` counts (vLLM
    ``num_spec_steps/num_accepted_draft_tokens/num_draft_tokens``; llama.cpp
    ``steps = completion_tokens - draft_n_accepted``, ``draft_n``, ``draft_n_accepted``).

    ``drafted`` defaults to ``steps * draft_length``. No per-position rates: only AL and
    the mean acceptance rate.
    """
    s = as_count_array(steps, "steps")
    a = as_count_array(accepted, "accepted")
    n = s.size
    if a.size != n:
        raise MetricInputError(f"accepted: got {a.size} values for {n} requests")
    if drafted is None:
        if draft_length is None:
            raise MetricInputError("drafted: give per-request drafted counts or draft_length")
        d = s * int(as_count_array(draft_length, "draft_length")[0])
    else:
        d = as_count_array(drafted, "drafted")
        if d.size != n:
            raise MetricInputError(f"drafted: got {d.size} values for {n} requests")
    if (a > d).any():
        i = int(np.flatnonzero(a > d)[0])
        raise MetricInputError(f"accepted: request {i} accepted {a[i]} of only {d[i]} drafted tokens")
    if draft_length is not None and (a > s * int(draft_length)).any():
        i = int(np.flatnonzero(a > s * int(draft_length))[0])
        raise MetricInputError(f"accepted: request {i} accepted {a[i]} > steps * K = {s[i] * int(draft_length)}")
    ids, cats, cols = _group_rows(
        question_ids,
        categories,
        n,
        {"steps": s, "accepted": a, "drafted": d, "max_tokens": _max_tokens_mask(finish_reasons, n)},
    )
    table = RequestAcceptance(
        question_ids=ids,
        categories=cats,
        steps=cols["steps"],
        accepted=cols["accepted"],
        drafted=cols["drafted"],
        histograms=None,
        draft_length=None if draft_length is None else int(draft_length),
        max_tokens_finished=cols["max_tokens"],
        input_form="counts",
    )
    return _finish_table(table, TrimRules(exclude_max_tokens_requests=exclude_max_tokens_requests))


# ---------------------------------------------------------------------------------------
# Summary with bootstrap CIs, per category
# ---------------------------------------------------------------------------------------


@dataclass
class AcceptanceSummary(JsonDataclass):
    """Every acceptance figure of one run (or one category of it). ``to_dict()`` is JSON-safe.

    ``acceptance_length`` is step-weighted (``1 + sum accepted / sum steps``);
    ``acceptance_length_request_weighted`` is the mean of per-request ALs. Intervals are
    ``[low, high]`` percentile bootstrap intervals over requests. Rates are lists of K
    floats, position 1 first; ``acceptance_histogram`` is ``h_0..h_K``.
    """

    acceptance_length: float
    acceptance_length_request_weighted: float | None
    acceptance_length_ci: list[float] | None
    acceptance_length_request_weighted_ci: list[float] | None
    conditional_acceptance_rate: list[float] | None
    conditional_acceptance_rate_ci: list[list[float]] | None
    marginal_acceptance_rate: list[float] | None
    marginal_acceptance_rate_ci: list[list[float]] | None
    mean_acceptance_rate: float | None
    mean_acceptance_rate_ci: list[float] | None
    acceptance_histogram: list[int] | None
    draft_length: int | None
    draft_length_inferred: bool
    num_requests: int
    num_requests_without_steps: int
    num_steps: int
    num_accepted_tokens: int
    num_draft_tokens: int
    num_max_tokens_requests: int | None
    max_tokens_share: float | None
    num_requests_excluded_max_tokens: int
    input_form: str
    trim_rules: dict | None
    trim_report: dict | None
    confidence: float
    num_resamples: int
    seed: int
    checks_failed: list[str]
    warnings: list[str]
    per_category: dict[str, dict] = field(default_factory=dict)


# column layout of the bootstrap matrix
_STEPS, _ACC, _DRAFT, _AL_SUM, _VALID = range(5)


def _columns(table: RequestAcceptance) -> np.ndarray:
    steps = table.steps.astype(np.float64)
    valid = steps > 0
    al = np.where(valid, acceptance_length_from_counts(np.where(valid, steps, 1), table.accepted), 0.0)
    cols = [steps, table.accepted.astype(np.float64), table.drafted.astype(np.float64), al, valid.astype(np.float64)]
    base = np.stack(cols, axis=1)
    if table.histograms is not None:
        base = np.hstack([base, table.histograms.astype(np.float64)])
    return base


def _stats_from_sums(sums: np.ndarray, has_hist: bool) -> dict[str, np.ndarray]:
    """All statistics from column sums (last axis), vectorised over leading axes."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "acceptance_length": acceptance_length_from_counts(sums[..., _STEPS], sums[..., _ACC]),
            "acceptance_length_request_weighted": sums[..., _AL_SUM] / sums[..., _VALID],
            "mean_acceptance_rate": mean_acceptance_rate(sums[..., _ACC], sums[..., _DRAFT]),
        }
    if has_hist:
        marginal = marginal_from_histogram(sums[..., _VALID + 1 :])
        out["marginal_acceptance_rate"] = marginal
        out["conditional_acceptance_rate"] = conditional_from_marginal(marginal)
    return out


def _ci_list(samples: np.ndarray | None, confidence: float):
    if samples is None:
        return None
    return percentile_interval(samples, confidence).tolist()


def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _build_summary(table, sums, boot, confidence, num_resamples, seed, member_mask, per_category) -> AcceptanceSummary:
    has_hist = table.histograms is not None
    point = _stats_from_sums(sums, has_hist)
    cis = {k: None for k in point}
    if boot is not None:
        boot_stats = _stats_from_sums(boot, has_hist)
        cis = {k: _ci_list(v, confidence) for k, v in boot_stats.items()}
    steps = table.steps[member_mask]
    mt = table.max_tokens_finished
    n_req = int(member_mask.sum())
    num_mt = None if mt is None else int(mt[member_mask].sum())
    hist = None
    if has_hist:
        hist = table.histograms[member_mask].sum(axis=0)
    al = float(point["acceptance_length"])
    marginal = point.get("marginal_acceptance_rate")
    conditional = point.get("conditional_acceptance_rate")
    checks = check_identities(al, marginal, conditional) if has_hist and np.isfinite(al) else []
    return AcceptanceSummary(
        acceptance_length=al,
        acceptance_length_request_weighted=_finite_or_none(point["acceptance_length_request_weighted"]),
        acceptance_length_ci=cis["acceptance_length"],
        acceptance_length_request_weighted_ci=cis["acceptance_length_request_weighted"],
        conditional_acceptance_rate=None if conditional is None else conditional.tolist(),
        conditional_acceptance_rate_ci=cis.get("conditional_acceptance_rate"),
        marginal_acceptance_rate=None if marginal is None else marginal.tolist(),
        marginal_acceptance_rate_ci=cis.get("marginal_acceptance_rate"),
        mean_acceptance_rate=_finite_or_none(point["mean_acceptance_rate"]),
        mean_acceptance_rate_ci=cis["mean_acceptance_rate"],
        acceptance_histogram=None if hist is None else hist.astype(int).tolist(),
        draft_length=table.draft_length,
        draft_length_inferred=table.draft_length_inferred,
        num_requests=n_req,
        num_requests_without_steps=int((steps == 0).sum()),
        num_steps=int(steps.sum()),
        num_accepted_tokens=int(table.accepted[member_mask].sum()),
        num_draft_tokens=int(table.drafted[member_mask].sum()),
        num_max_tokens_requests=num_mt,
        max_tokens_share=None if num_mt is None or n_req == 0 else num_mt / n_req,
        num_requests_excluded_max_tokens=table.num_requests_excluded_max_tokens,
        input_form=table.input_form,
        trim_rules=None if table.trim_rules is None else table.trim_rules.to_dict(),
        trim_report=None if table.trim_report is None else table.trim_report.to_dict(),
        confidence=confidence,
        num_resamples=num_resamples,
        seed=seed,
        checks_failed=checks,
        warnings=list(table.warnings),
        per_category=per_category,
    )


def summarize_acceptance(
    table: RequestAcceptance,
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    stratify_by_category: bool = True,
) -> AcceptanceSummary:
    """All acceptance figures with bootstrap CIs, overall and per category.

    Resampling is over requests, stratified by category by default (each category keeps its
    size, as in a benchmark with a fixed number of prompts per category), so the per-category
    intervals come from the same draws. ``num_resamples=0`` skips the intervals.
    """
    X = _columns(table)
    codes, names = group_codes(table.categories)
    boot_by_stratum = None
    if num_resamples > 0 and table.num_requests > 0:
        strata = codes if stratify_by_category else None
        boot_by_stratum = resampled_column_sums(X, num_resamples=num_resamples, seed=seed, strata=strata)
    per_category = {}
    for c, name in enumerate(names):
        mask = codes == c
        boot_c = None
        if boot_by_stratum is not None and stratify_by_category:
            boot_c = boot_by_stratum[:, c, :]
        per_category[name] = _build_summary(
            table, X[mask].sum(axis=0), boot_c, confidence, num_resamples, seed, mask, {}
        ).to_dict()
        per_category[name].pop("per_category", None)
    boot_all = None if boot_by_stratum is None else boot_by_stratum.sum(axis=1)
    summary = _build_summary(
        table, X.sum(axis=0), boot_all, confidence, num_resamples, seed, np.ones(table.num_requests, bool), per_category
    )
    return summary


def acceptance_from_step_sizes(step_sizes, **kwargs) -> AcceptanceSummary:
    """Shortcut: :func:`requests_from_step_sizes` then :func:`summarize_acceptance`.

    Keyword arguments are split between the two (``num_resamples``, ``confidence``, ``seed``,
    ``stratify_by_category`` go to the summary).
    """
    summary_kw = {k: kwargs.pop(k) for k in ("num_resamples", "confidence", "seed", "stratify_by_category") if k in kwargs}
    return summarize_acceptance(requests_from_step_sizes(step_sizes, **kwargs), **summary_kw)


# ---------------------------------------------------------------------------------------
# Input form 3: run-level counter deltas
# ---------------------------------------------------------------------------------------


def acceptance_from_counters(
    num_drafts,
    num_draft_tokens,
    num_accepted_tokens,
    accepted_per_position=None,
    *,
    categories=None,
) -> AcceptanceSummary:
    """Input form 3: deltas of server counters over a run (vLLM / llama.cpp Prometheus
    ``spec_decode_num_drafts``, ``..._num_draft_tokens``, ``..._num_accepted_tokens``,
    ``..._num_accepted_tokens_per_pos{position=i}``).

    Each argument is one value per run (or per category run); rows with the same category
    are summed. ``AL = 1 + accepted / drafts``; ``accepted_per_position[i] / drafts`` is the
    *marginal* ``P(>= i+1)``; the conditional rates are ratios of consecutive marginals.
    There are no per-request rows, so no request-weighted AL and no intervals.
    """
    drafts = as_count_array(num_drafts, "num_drafts")
    tokens = as_count_array(num_draft_tokens, "num_draft_tokens")
    accepted = as_count_array(num_accepted_tokens, "num_accepted_tokens")
    n = drafts.size
    for name, arr in (("num_draft_tokens", tokens), ("num_accepted_tokens", accepted)):
        if arr.size != n:
            raise MetricInputError(f"{name}: got {arr.size} values for {n} rows")
    per_pos = None
    if accepted_per_position is not None:
        app = accepted_per_position
        if n == 1 and len(app) and np.ndim(app[0]) == 0:
            app = [app]  # one run given as a flat list of positions
        rows = as_ragged_counts(app, "accepted_per_position")
        if rows.num_rows != n:
            raise MetricInputError(f"accepted_per_position: got {rows.num_rows} rows for {n} counter rows")
        width = int(rows.lengths.max()) if n else 0
        per_pos = np.zeros((n, width), dtype=np.int64)
        per_pos[rows.row_index(), np.arange(rows.values.size) - np.repeat(rows.offsets[:-1], rows.lengths)] = rows.values
    cats = as_labels(categories, n, "categories", default=ALL_CATEGORY)
    codes, names = group_codes(cats)

    def one(mask) -> AcceptanceSummary:
        d, t, a = int(drafts[mask].sum()), int(tokens[mask].sum()), int(accepted[mask].sum())
        al = float(acceptance_length_from_counts(d, a))
        marginal = conditional = None
        notes = []
        k = None
        if per_pos is not None:
            pp = per_pos[mask].sum(axis=0)
            k = int(pp.size)
            with np.errstate(invalid="ignore", divide="ignore"):
                marginal = pp / d if d > 0 else np.zeros(k)
            conditional = conditional_from_marginal(marginal)
        elif d > 0 and t % d == 0:
            k = t // d
        checks = check_identities(al, marginal, conditional) if marginal is not None and np.isfinite(al) else []
        if per_pos is not None and int(per_pos[mask].sum()) != a:
            checks.append(f"sum of accepted_per_position ({int(per_pos[mask].sum())}) != num_accepted_tokens ({a})")
        return AcceptanceSummary(
            acceptance_length=al,
            acceptance_length_request_weighted=None,
            acceptance_length_ci=None,
            acceptance_length_request_weighted_ci=None,
            conditional_acceptance_rate=None if conditional is None else conditional.tolist(),
            conditional_acceptance_rate_ci=None,
            marginal_acceptance_rate=None if marginal is None else np.asarray(marginal).tolist(),
            marginal_acceptance_rate_ci=None,
            mean_acceptance_rate=_finite_or_none(mean_acceptance_rate(a, t)),
            mean_acceptance_rate_ci=None,
            acceptance_histogram=None,
            draft_length=k,
            draft_length_inferred=False,
            num_requests=0,
            num_requests_without_steps=0,
            num_steps=d,
            num_accepted_tokens=a,
            num_draft_tokens=t,
            num_max_tokens_requests=None,
            max_tokens_share=None,
            num_requests_excluded_max_tokens=0,
            input_form="counters",
            trim_rules=None,
            trim_report=None,
            confidence=DEFAULT_CONFIDENCE,
            num_resamples=0,
            seed=DEFAULT_SEED,
            checks_failed=checks,
            warnings=notes,
        )

    per_category = {}
    for c, name in enumerate(names):
        d = one(codes == c).to_dict()
        d.pop("per_category", None)
        per_category[name] = d
    summary = one(np.ones(n, dtype=bool))
    summary.per_category = per_category
    return summary


# ---------------------------------------------------------------------------------------
# Paired comparison of two runs
# ---------------------------------------------------------------------------------------


@dataclass
class AcceptanceComparison(JsonDataclass):
    """Run B minus run A over the requests both share (paired by ``question_id``)."""

    acceptance_length: PairedDifference
    acceptance_length_request_weighted: PairedDifference

    def to_dict(self) -> dict:
        return {
            "acceptance_length": self.acceptance_length.to_dict(),
            "acceptance_length_request_weighted": self.acceptance_length_request_weighted.to_dict(),
        }


def compare_acceptance(
    run_a: RequestAcceptance,
    run_b: RequestAcceptance,
    *,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> AcceptanceComparison:
    """Difference in AL (B - A; step- and request-weighted) with paired bootstrap CIs.

    Requests are paired by ``question_id`` (turns were already pooled per id); requests
    present in only one run are left out and counted.
    """
    cols = [_STEPS, _ACC, _AL_SUM, _VALID]
    xa, xb = _columns(run_a)[:, cols], _columns(run_b)[:, cols]

    def step_weighted(s):
        return acceptance_length_from_counts(s[..., 0], s[..., 1])

    def request_weighted(s):
        with np.errstate(invalid="ignore", divide="ignore"):
            return s[..., 2] / s[..., 3]

    kw = dict(num_resamples=num_resamples, confidence=confidence, seed=seed)
    return AcceptanceComparison(
        acceptance_length=paired_difference(xa, run_a.question_ids, xb, run_b.question_ids, step_weighted, **kw),
        acceptance_length_request_weighted=paired_difference(
            xa, run_a.question_ids, xb, run_b.question_ids, request_weighted, **kw
        ),
    )


__all__ = [
    "AcceptanceComparison",
    "AcceptanceSummary",
    "AcceptanceWarning",
    "RequestAcceptance",
    "TrimReport",
    "TrimRules",
    "acceptance_from_counters",
    "acceptance_from_step_sizes",
    "acceptance_length_from_conditional",
    "acceptance_length_from_counts",
    "acceptance_length_from_histogram",
    "acceptance_length_from_marginal",
    "check_identities",
    "compare_acceptance",
    "conditional_from_marginal",
    "detect_merged_chunks",
    "histograms_from_steps",
    "infer_draft_length",
    "marginal_from_conditional",
    "marginal_from_histogram",
    "mean_acceptance_rate",
    "requests_from_counts",
    "requests_from_histograms",
    "requests_from_step_sizes",
    "summarize_acceptance",
    "to_jsonable",
    "trim_step_sizes",
]
