"""A draft-length schedule: batch-size ranges (inclusive) -> draft length K, parsed and checked once.

``"1-1:4,2-64:1"`` reads: a batch of 1 running request drafts K = 4 tokens per step, a batch of 2
to 64 drafts K = 1. The ranges must start at 1, follow each other without a gap or an overlap and
each K must lie in ``0 <= K <= max_k`` (``--draft-length``; K = 0: no speculation at that batch
size). One parser for ``speedbench serve --draft-schedule`` and ``speedbench schedule``'s output,
so what one writes the other reads.

The engines' own forms are written by :mod:`speedbench.engine.schedule_forms`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE = re.compile(r"^\s*(\S+?)\s*-\s*(\S+?)\s*:\s*(\S+)\s*$")


class DraftScheduleError(ValueError):
    """A schedule that cannot be served; the message names the range."""


@dataclass(frozen=True)
class BatchRange:
    """Batch sizes ``low`` to ``high`` (both included) draft ``k`` tokens per step."""

    low: int
    high: int
    k: int

    @property
    def text(self) -> str:
        return f"{self.low}-{self.high}:{self.k}"


@dataclass(frozen=True)
class DraftSchedule:
    """Contiguous batch-size ranges from 1 to ``max_batch``, each with its K (checked by
    :func:`check_ranges`)."""

    ranges: tuple[BatchRange, ...]

    @property
    def max_batch(self) -> int:
        return self.ranges[-1].high

    @property
    def max_k(self) -> int:
        return max(r.k for r in self.ranges)

    @property
    def text(self) -> str:
        """The ``--draft-schedule`` form, ``"1-1:4,2-64:1"``."""
        return ",".join(r.text for r in self.ranges)

    def k_at(self, batch_size: int) -> int:
        """K at one batch size (``ValueError`` outside 1..max_batch)."""
        for r in self.ranges:
            if r.low <= batch_size <= r.high:
                return r.k
        raise ValueError(f"batch size {batch_size} is outside the schedule (1-{self.max_batch})")


def _integer(text: str, what: str, item: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise DraftScheduleError(f"range {item!r}: {what} {text!r} is not an integer")
    return int(text)


def check_ranges(ranges: list[BatchRange] | tuple[BatchRange, ...], max_k: int | None) -> DraftSchedule:
    """The ranges as a schedule, or ``DraftScheduleError`` naming the first range that breaks a rule:
    low >= 1 and low <= high; the first starts at 1; each starts right after the one before (no gap,
    no overlap; sorted by ``low`` first, so the message names the two ranges); 0 <= K <= max_k."""
    if not ranges:
        raise DraftScheduleError("empty schedule: give at least one range LOW-HIGH:K")
    for r in ranges:
        if r.low < 1:
            raise DraftScheduleError(f"range {r.text!r}: batch sizes start at 1, got {r.low}")
        if r.high < r.low:
            raise DraftScheduleError(f"range {r.text!r}: the end {r.high} is below the start {r.low}")
        if r.k < 0:
            raise DraftScheduleError(f"range {r.text!r}: K = {r.k} is negative (0: no speculation)")
        if max_k is not None and r.k > max_k:
            raise DraftScheduleError(f"range {r.text!r}: K = {r.k} is above --draft-length {max_k}")
    ordered = sorted(ranges, key=lambda r: (r.low, r.high))
    if ordered[0].low != 1:
        raise DraftScheduleError(f"range {ordered[0].text!r}: the schedule must start at batch size 1 "
                                 f"(batch sizes 1-{ordered[0].low - 1} have no K)")
    for before, after in zip(ordered, ordered[1:]):
        if after.low <= before.high:
            raise DraftScheduleError(f"range {after.text!r} overlaps range {before.text!r} "
                                     f"(batch size {after.low} is in both)")
        if after.low > before.high + 1:
            raise DraftScheduleError(f"range {after.text!r}: gap after range {before.text!r} "
                                     f"(batch sizes {before.high + 1}-{after.low - 1} have no K)")
    return DraftSchedule(tuple(ordered))


def parse_draft_schedule(text: str, max_k: int | None = None) -> DraftSchedule:
    """``"LOW-HIGH:K,LOW-HIGH:K,..."`` -> :class:`DraftSchedule` (``DraftScheduleError`` naming the
    range otherwise). ``max_k``: the largest K allowed (the server's ``--draft-length``)."""
    ranges = []
    for item in (part.strip() for part in str(text).split(",")):
        if not item:
            raise DraftScheduleError(f"empty range in {text!r} (write LOW-HIGH:K, comma-separated)")
        match = _RANGE.match(item)
        if not match:
            raise DraftScheduleError(f"range {item!r}: expected LOW-HIGH:K (batch sizes LOW to HIGH, both "
                                     f"included, draft K tokens), e.g. 1-1:4")
        low, high, k = (_integer(match.group(i), what, item) for i, what in
                        ((1, "start"), (2, "end"), (3, "K")))
        ranges.append(BatchRange(low, high, k))
    return check_ranges(ranges, max_k)


def merged(ranges: list[BatchRange]) -> list[BatchRange]:
    """Adjacent ranges with the same K as one (``1-1:4,2-3:4`` -> ``1-3:4``)."""
    out: list[BatchRange] = []
    for r in ranges:
        if out and out[-1].k == r.k and out[-1].high + 1 == r.low:
            out[-1] = BatchRange(out[-1].low, r.high, r.k)
        else:
            out.append(r)
    return out
