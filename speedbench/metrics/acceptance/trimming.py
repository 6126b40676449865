"""Streamed chunk sizes as steps: trimming rules, K, merged chunks, histograms.

Part of ``speedbench.metrics.acceptance`` (see its docstring for the notation).
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from speedbench.metrics.results import JsonDataclass
from speedbench.metrics.validation import MetricInputError, Ragged


def as_ragged_float(rows, like: Ragged, name: str) -> Ragged:
    """Ragged float rows shaped exactly like ``like`` (one value per chunk)."""
    if len(rows) != like.num_rows:
        raise MetricInputError(f"{name}: got {len(rows)} rows for {like.num_rows}")
    # A row may be None (no times: nothing to judge by them), read as NaN.
    rows = [np.full(int(n), np.nan) if r is None else r for r, n in zip(rows, like.lengths)]
    lengths = np.asarray([len(r) for r in rows], dtype=np.int64)
    if (lengths != like.lengths).any():
        i = int(np.flatnonzero(lengths != like.lengths)[0])
        raise MetricInputError(f"{name}: row {i} has {lengths[i]} values for {like.lengths[i]} chunks")
    values = np.concatenate([np.asarray(r, dtype=np.float64) for r in rows]) if rows else np.zeros(0)
    return Ragged(values=values, offsets=like.offsets)


class AcceptanceWarning(UserWarning):
    """Something in the acceptance input needs attention (inferred K, merged chunks, ...)."""


@dataclass(frozen=True)
class TrimRules:
    """Which streamed chunks count as verification steps. The defaults are this project's
    choice: the reference's main branch trims nothing but EOS (docs/metrics.md, trimming).

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
    # Chunks of at most K+1 tokens that arrived after a stall (see :func:`stalled_chunks`):
    # merged too, but only the inter-chunk gaps show it. Counted in num_merged_chunks as well.
    num_stalled_chunks: int = 0


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
    report._keep = keep  # which input chunks survived, for masks aligned with the input
    size_counts = np.bincount(trimmed.values) if trimmed.values.size else np.zeros(0, dtype=np.int64)
    report.step_size_counts = {int(s): int(size_counts[s]) for s in np.flatnonzero(size_counts)}
    return trimmed, report


STALL_FACTOR = 4.0  # a gap this many times the stream's median gap is a stall...
STALL_MIN_GAP_S = 0.010  # ...and at least this long (a stream of microsecond gaps has no stalls)
MIN_GAPS_FOR_STALLS = 4  # fewer gaps give no meaningful median


def stalled_chunks(chunk_times: Ragged | None, chunks: Ragged, factor: float = STALL_FACTOR,
                   min_gap_s: float = STALL_MIN_GAP_S) -> np.ndarray:
    """Mask over the flat chunks: a chunk of more than one token that arrived more than ``factor``
    times the stream's median inter-chunk gap, and at least ``min_gap_s``, after the previous one.

    A frontend that falls behind (vLLM's, even at concurrency 1: a 4-token chunk after a 330 ms
    stall without speculation) sends the steps produced meanwhile as one chunk, which can be no
    larger than K+1 and so escape the size test. Streams with fewer than
    ``MIN_GAPS_FOR_STALLS`` gaps are not judged. ``chunk_times`` are seconds (any origin). The
    rule is conservative but not free: a genuine multi-token step that waited behind another
    request's long prefill looks the same, and is left out too (counted in the report).
    """
    out = np.zeros(chunks.values.size, dtype=bool)
    if chunk_times is None:
        return out
    times = chunk_times.values.astype(np.float64)
    for row in range(chunks.num_rows):
        a, b = int(chunks.offsets[row]), int(chunks.offsets[row + 1])
        if b - a - 1 < MIN_GAPS_FOR_STALLS or np.isnan(times[a:b]).any():
            continue
        gaps = np.diff(times[a:b])
        median = float(np.median(gaps))
        if median <= 0:
            continue
        out[a + 1:b] = (gaps > max(factor * median, min_gap_s)) & (chunks.values[a + 1:b] > 1)
    return out


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
