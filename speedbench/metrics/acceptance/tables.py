"""The per-request acceptance table and its builders (input forms 1 and 2).

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from speedbench.metrics.acceptance.per_step import per_position_unknown_reason
from speedbench.metrics.acceptance.trimming import (
    AcceptanceWarning,
    as_ragged_float,
    TrimReport,
    TrimRules,
    detect_merged_chunks,
    histograms_from_steps,
    infer_draft_length,
    stalled_chunks,
    trim_step_sizes,
)
from speedbench.metrics.validation import MetricInputError, Ragged, as_count_array, as_labels, as_ragged_counts
from speedbench.records import MAX_TOKENS_REASONS


ALL_CATEGORY = "all"


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
    # Step definitions (speedbench.metrics.acceptance.steps): what ``steps`` counts ("drafted" steps for
    # engine histograms and drafted-step counts, "decode" steps for chunks and llama.cpp), and
    # the decode steps and the tokens they emitted (prefill's token excluded) when known.
    step_kind: str = "decode"
    decode_steps: np.ndarray | None = None
    decode_tokens: np.ndarray | None = None
    # Per-step draft lengths (speedbench.metrics.acceptance.per_step): per request the position counts
    # [D_i, R_i, A_i] (shape (n, 3, K)) and the steps by drafted count (shape (n, K + 1)) when the engine
    # gave per-step counts; why per-position rates, or drafted tokens, are unknown when they are.
    position_counts: np.ndarray | None = None
    draft_length_counts: np.ndarray | None = None
    per_position_unknown: str | None = None
    drafted_unknown: str | None = None
    drafted_from_k: bool = False  # ``drafted`` is steps x K, assumed, not counted by the engine
    k_varied: bool = False  # K varied (the engine's counts say so) though no per-step counts say how

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


def _checked_counts(steps, accepted, drafted, draft_length) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, accepted, drafted)`` as count arrays, checked against each other and K."""
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
    return s, a, d


def _decode_columns(decode_steps, decode_tokens, n: int) -> dict[str, np.ndarray | None]:
    return {name: None if values is None else _row_counts(values, n, name)
            for name, values in (("decode_steps", decode_steps), ("decode_tokens", decode_tokens))}


def _row_counts(values, n: int, name: str) -> np.ndarray:
    arr = as_count_array(values, name)
    if arr.size != n:
        raise MetricInputError(f"{name}: got {arr.size} values for {n} rows")
    return arr


def _finish_table(table: RequestAcceptance, rules: TrimRules | None) -> RequestAcceptance:
    mask = table.max_tokens_finished
    if rules is not None and rules.exclude_max_tokens_requests and mask is not None and mask.any():
        keep = ~mask
        table.num_requests_excluded_max_tokens = int(mask.sum())
        for name in ("question_ids", "categories", "steps", "accepted", "drafted", "histograms", "decode_steps",
                     "decode_tokens", "position_counts", "draft_length_counts"):
            col = getattr(table, name)
            if col is not None:
                setattr(table, name, col[keep])
        table.max_tokens_finished = mask[keep]
    return table


def _resolve_draft_length(draft_length, steps: Ragged, notes: list[str]) -> int:
    if draft_length is None:
        k = infer_draft_length(steps.values)
        notes.append(f"draft_length inferred as {k} (max step size - 1)")
        return k
    k = int(as_count_array(draft_length, "draft_length")[0])
    if k < 1:
        raise MetricInputError(f"draft_length: must be >= 1, got {k}")
    return k


def _merged_mask(steps: Ragged, draft_length: int, stalled: np.ndarray, report: TrimReport, rules: TrimRules,
                 notes: list[str]) -> np.ndarray:
    """Steps that are several steps merged: larger than K+1, or after a stall; counted and warned."""
    merged = detect_merged_chunks(steps, draft_length)
    report.num_stalled_chunks = int((stalled & ~merged).sum())
    merged = merged | stalled
    if merged.any():
        rows = np.unique(steps.row_index()[merged])
        report.num_merged_chunks = int(merged.sum())
        report.merged_chunk_share = float(merged.mean())
        report.merged_chunk_rows = rows[:100].tolist()
        message = (
            f"{report.num_merged_chunks} merged chunk(s) ({report.num_merged_chunks - report.num_stalled_chunks} "
            f"larger than K+1 = {draft_length + 1} tokens, {report.num_stalled_chunks} after a stall) in "
            f"{rows.size} stream(s) (first rows: {rows[:5].tolist()}): several steps each, not one; "
            "excluded from the histogram"
        )
        if rules.merged_chunks == "raise":
            raise MetricInputError("step_sizes: " + message)
        warnings.warn(message, AcceptanceWarning, stacklevel=3)
        notes.append(message)
    return merged


def requests_from_step_sizes(
    step_sizes,
    *,
    draft_length: int | None = None,
    categories=None,
    question_ids=None,
    finish_reasons=None,
    rules: TrimRules = TrimRules(),
    chunk_times=None,
) -> RequestAcceptance:
    """Input form 1: the token count of every streamed chunk of every stream, first chunk included.

    Rows that share a ``question_id`` are the turns of one request and are pooled (each turn
    is trimmed on its own). ``finish_reasons`` (``"length"`` = stopped at ``max_tokens``)
    lets the summary report, or with ``rules.exclude_max_tokens_requests`` drop, capped
    requests. Without ``draft_length``, K = max step - 1 with a warning. ``chunk_times`` (arrival
    time of every chunk, same shape; a row may be None) lets chunks after a stall be found
(:func:`stalled_chunks`).
    """
    chunks = as_ragged_counts(step_sizes, "step_sizes")
    n = chunks.num_rows
    times = None if chunk_times is None else as_ragged_float(chunk_times, chunks, "chunk_times")
    stalled = stalled_chunks(times, chunks)
    steps, report = trim_step_sizes(chunks, rules)
    stalled = stalled[report._keep]
    notes: list[str] = []
    inferred = draft_length is None
    draft_length = _resolve_draft_length(draft_length, steps, notes)
    merged = _merged_mask(steps, draft_length, stalled, report, rules, notes)
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
        question_ids=ids, categories=cats, steps=cols["steps"], accepted=cols["accepted"],
        drafted=cols["steps"] * draft_length, drafted_from_k=True, histograms=cols["histograms"],
        draft_length=draft_length, draft_length_inferred=inferred,
        decode_steps=cols["steps"], decode_tokens=cols["steps"] + cols["accepted"],
        max_tokens_finished=cols["max_tokens"], input_form="step_sizes", trim_rules=rules, trim_report=report,
        warnings=notes,
    )
    return _finish_table(table, rules)


def _dense_histograms(histograms, draft_length: int | None) -> tuple[np.ndarray, list[str]]:
    """Histograms as an ``(n, K + 1)`` matrix, shorter rows padded with zeros, and the note saying so."""
    rows = as_ragged_counts(histograms, "histograms")
    n = rows.num_rows
    width = int(rows.lengths.max()) if n else 1
    if draft_length is not None:
        if width > int(draft_length) + 1:
            raise MetricInputError(f"histograms: a histogram has {width} entries, more than K + 1 = {draft_length + 1}")
        width = int(draft_length) + 1
    if width < 2:
        raise MetricInputError("histograms: each histogram needs h_0..h_K with K >= 1 (at least 2 entries)")
    dense = np.zeros((n, width), dtype=np.int64)
    dense[rows.row_index(), np.arange(rows.values.size) - np.repeat(rows.offsets[:-1], rows.lengths)] = rows.values
    padded = n and (rows.lengths != width).any()
    return dense, [f"histograms of different lengths: padded with zeros to K = {width - 1}"] if padded else []


def requests_from_histograms(
    histograms,
    *,
    categories=None,
    question_ids=None,
    finish_reasons=None,
    exclude_max_tokens_requests: bool = False,
    draft_length: int | None = None,
    decode_steps=None,
    decode_tokens=None,
    drafted=None,
    per_step: dict | None = None,
) -> RequestAcceptance:
    """Input form 2a: an engine's per-request histogram ``h_0..h_K`` over drafted steps (e.g. vLLM's
    ``acceptance_histogram``, SGLang's ``spec_correct_drafts_histogram``). Shorter rows are padded
    with zeros (a position never reached): SGLang's histogram grows only to the largest count a
    request accepted, so pass the true ``draft_length``; without it K = longest length - 1, a
    lower bound. ``decode_steps`` / ``decode_tokens`` (per row) carry every decode step and the
    tokens they emitted, for tokens per decode step. ``drafted`` (per row) are the drafted tokens when
    the engine counted them (default ``steps x K``: a fixed K); ``per_step`` holds
    ``position_counts`` / ``draft_length_counts`` (:func:`speedbench.metrics.acceptance.from_records.per_step_columns`)."""
    dense, notes = _dense_histograms(histograms, draft_length)
    n, width = dense.shape
    k = width - 1
    ids, cats, cols = _group_rows(
        question_ids,
        categories,
        n,
        {"histograms": dense, "max_tokens": _max_tokens_mask(finish_reasons, n),
         "drafted": None if drafted is None else _row_counts(drafted, n, "drafted"),
         **_decode_columns(decode_steps, decode_tokens, n), **(per_step or {})},
    )
    h = cols["histograms"]
    steps = h.sum(axis=1)
    table = RequestAcceptance(
        question_ids=ids,
        categories=cats,
        steps=steps,
        accepted=h @ np.arange(width),
        drafted=steps * k if cols["drafted"] is None else cols["drafted"],
        drafted_from_k=cols["drafted"] is None,
        position_counts=cols.get("position_counts"),
        draft_length_counts=cols.get("draft_length_counts"),
        histograms=h,
        draft_length=k,
        max_tokens_finished=cols["max_tokens"],
        input_form="histograms",
        warnings=notes,
        step_kind="drafted",
        decode_steps=cols["decode_steps"],
        decode_tokens=cols["decode_tokens"],
    )
    if cols["drafted"] is not None and cols.get("position_counts") is None:  # K varied, no per-step counts
        table.per_position_unknown = per_position_unknown_reason(int(cols["drafted"].sum()), int(steps.sum()), k)
        table.k_varied = table.per_position_unknown is not None
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
    step_kind: str = "drafted",
    decode_steps=None,
    decode_tokens=None,
    per_step: dict | None = None,
) -> RequestAcceptance:
    """Input form 2b: per-request ``(steps, accepted, drafted)`` counts (vLLM
    ``num_spec_steps/num_accepted_draft_tokens/num_draft_tokens``; llama.cpp
    ``steps = completion_tokens - draft_n_accepted``, ``draft_n``, ``draft_n_accepted``).

    ``drafted`` defaults to ``steps * draft_length``. No per-position rates: only AL and
    the mean acceptance rate. ``step_kind`` says what ``steps`` counts: ``"drafted"`` steps
    (vLLM, SGLang) or every ``"decode"`` step (llama.cpp's per-request timings).
    """
    s, a, d = _checked_counts(steps, accepted, drafted, draft_length)
    n = s.size
    ids, cats, cols = _group_rows(
        question_ids,
        categories,
        n,
        {"steps": s, "accepted": a, "drafted": d, "max_tokens": _max_tokens_mask(finish_reasons, n),
         **_decode_columns(decode_steps, decode_tokens, n), **(per_step or {})},
    )
    table = RequestAcceptance(
        question_ids=ids,
        categories=cats,
        steps=cols["steps"],
        accepted=cols["accepted"],
        drafted=cols["drafted"],
        drafted_from_k=drafted is None,
        histograms=None,
        position_counts=cols.get("position_counts"),
        draft_length_counts=cols.get("draft_length_counts"),
        draft_length=None if draft_length is None else int(draft_length),
        max_tokens_finished=cols["max_tokens"],
        input_form="counts",
        step_kind=step_kind,
        decode_steps=cols["decode_steps"] if cols["decode_steps"] is not None else
        (cols["steps"] if step_kind == "decode" else None),
        decode_tokens=cols["decode_tokens"],
    )
    if drafted is not None and draft_length and step_kind == "drafted":  # fewer than steps x K drafted: K varied
        table.per_position_unknown = per_position_unknown_reason(int(d.sum()), int(s.sum()), int(draft_length))
        table.k_varied = table.per_position_unknown is not None
    return _finish_table(table, TrimRules(exclude_max_tokens_requests=exclude_max_tokens_requests))
