"""The protocol's answer as a schedule: the best draft length per batch size, over every batch size.

Input: a small table of what the sweep measured for one workload and one draft family: per
concurrency (the batch size the client held) and per K (0 = the baseline, no speculation) the
output throughput of each repeat.

1. **Per measured concurrency**, the candidate with the highest median output throughput is the
   leader. Every candidate whose median is within the spread of the leader's
   (``leader - median <= MAD_leader + MAD_candidate``, MAD = median absolute deviation over the
   repeats, :mod:`speedbench.sweep.choice`) ties with it, and the **smallest** K among the tied
   ones is chosen: the cheaper draft, and no speculation (K = 0) where the baseline is as fast
   or faster. With one repeat no spread was measured and only exact ties count.
2. **Between measured concurrencies** each choice holds from its concurrency up to the batch size
   before the next measured one (a step function: batch sizes 3 to 7 take the K chosen at 2 when
   2 and 8 were measured); batch sizes below the smallest measured concurrency take its K, and the
   largest measured concurrency's K holds up to ``max_batch`` (the server's largest batch).
   Adjacent ranges with the same K are merged.

The result is a :class:`~speedbench.engine.draft_schedule.DraftSchedule` (``1-1:4,2-64:1``),
written in each engine's form by :mod:`speedbench.engine.schedule_forms`.
"""
from __future__ import annotations

from dataclasses import dataclass

from speedbench.engine.draft_schedule import BatchRange, DraftSchedule, check_ranges, merged
from speedbench.sweep.choice import Candidate


@dataclass(frozen=True)
class Measured:
    """One cell of the table: output throughput per repeat at one concurrency and K (0: baseline)."""

    concurrency: int
    k: int
    output_tps: tuple[float, ...]


@dataclass(frozen=True)
class ScheduleChoice:
    """The K chosen at one measured concurrency, and why."""

    concurrency: int
    k: int
    median_output_tps: float
    leader_k: int  # the highest median (equal to k unless a smaller K tied within the spread)
    tied: tuple[int, ...]  # every K within the leader's spread, the leader included
    repeats: int

    @property
    def note(self) -> str:
        if self.repeats < 2:
            return "highest (one repeat: spread not measured, only exact ties count)"
        if len(self.tied) == 1:
            return "highest median"
        return (f"K={self.leader_k} has the highest median; K in {list(self.tied)} are within the spread "
                f"over repeats: the smallest taken")


@dataclass(frozen=True)
class DerivedSchedule:
    choices: tuple[ScheduleChoice, ...]
    schedule: DraftSchedule


class ScheduleDerivationError(ValueError):
    """The table cannot give a schedule; the message says what is missing."""


def _spread(candidate: Candidate) -> float:
    return candidate.mad or 0.0  # one repeat: no spread measured, only exact ties


def choose_k(concurrency: int, cells: list[Measured]) -> ScheduleChoice:
    """Step 1 of the module docstring for one concurrency."""
    candidates = [Candidate(c.k, list(c.output_tps)) for c in sorted(cells, key=lambda c: c.k) if c.output_tps]
    if not candidates:
        raise ScheduleDerivationError(f"concurrency {concurrency}: no output throughput measured")
    leader = min(candidates, key=lambda c: (-c.median, c.k))
    tied = [c for c in candidates if leader.median - c.median <= _spread(leader) + _spread(c)]
    chosen = min(tied, key=lambda c: c.k)
    return ScheduleChoice(concurrency=concurrency, k=chosen.k, median_output_tps=chosen.median,
                          leader_k=leader.k, tied=tuple(c.k for c in tied), repeats=len(chosen.values))


def fill_ranges(choices: list[ScheduleChoice], max_batch: int) -> list[BatchRange]:
    """Step 2 of the module docstring: batch sizes 1..max_batch, merged."""
    ordered = sorted(choices, key=lambda c: c.concurrency)
    if max_batch < ordered[-1].concurrency:
        raise ScheduleDerivationError(f"max batch {max_batch} is below the largest measured concurrency "
                                      f"{ordered[-1].concurrency}")
    ranges = []
    for i, choice in enumerate(ordered):
        low = 1 if i == 0 else choice.concurrency
        high = ordered[i + 1].concurrency - 1 if i + 1 < len(ordered) else max_batch
        ranges.append(BatchRange(low, high, choice.k))
    return merged(ranges)


def derive_schedule(table: list[Measured], max_batch: int | None = None) -> DerivedSchedule:
    """The schedule of a measured table (module docstring); ``max_batch`` defaults to the largest
    measured concurrency. Needs at least one speculative K and one concurrency."""
    if not any(c.k > 0 for c in table):
        raise ScheduleDerivationError("no speculative variant (K >= 1) was measured")
    levels = sorted({c.concurrency for c in table})
    choices = [choose_k(level, [c for c in table if c.concurrency == level]) for level in levels]
    ranges = fill_ranges(choices, max_batch if max_batch is not None else levels[-1])
    return DerivedSchedule(tuple(choices), check_ranges(ranges, max(c.k for c in table)))
