"""Coverage: the share of a load point's planned request-turns that were measured, per category.

Failed request-turns leave the figures, and faults do not strike evenly (long prompts and long
answers fail more often), so a point's figures stand for the survivors. Coverage says how many
survived where::

    share_c = measured_c / planned_c

with ``planned_c`` the request-turns of category ``c`` a load point plans (the run manifest's
``planned_turns``; for a run written before it, every turn of each conversation seen in the run)
and ``measured_c`` its successful, live request-turns (a failed record a ``--retry-errors`` rerun
superseded is not live). ``failed_c`` are live failed records, ``missing_c`` planned request-turns
without any record (a run that stopped). A category whose share is below ``min_share``
(``settings.MIN_CATEGORY_COVERAGE``) is listed in ``below``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from speedbench.records import TurnRecord
from speedbench.settings import MIN_CATEGORY_COVERAGE


@dataclass(frozen=True)
class CategoryCoverage:
    planned: int
    measured: int
    failed: int
    missing: int
    share: float | None  # measured / planned (None: nothing planned)


@dataclass
class PointCoverage:
    """One load point: the totals, each category's, and the categories below ``min_share``."""

    planned: int
    measured: int
    failed: int
    missing: int
    share: float | None
    min_share: float
    per_category: dict[str, CategoryCoverage] = field(default_factory=dict)
    below: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _share(measured: int, planned: int) -> float | None:
    return measured / planned if planned else None


def planned_from_records(records: Iterable[TurnRecord]) -> dict[str, int]:
    """Request-turns per category of every conversation seen at any point (no warmup): the plan of
    a run whose manifest does not state it."""
    turns: dict[str, tuple[str, int]] = {}
    for record in records:
        if not record.warmup:
            turns[record.question_id] = (record.category, max(record.num_turns, turns.get(record.question_id,
                                                                                        ("", 0))[1]))
    planned: Counter = Counter()
    for category, num_turns in turns.values():
        planned[category] += num_turns
    return dict(sorted(planned.items()))


def point_coverage(records: Iterable[TurnRecord], planned: Mapping[str, int],
                   min_share: float = MIN_CATEGORY_COVERAGE) -> PointCoverage:
    """Coverage of one load point from its live records (warmup ones are left out)."""
    measured: Counter = Counter()
    failed: Counter = Counter()
    for record in records:
        if not record.warmup:
            (measured if record.ok else failed)[record.category] += 1
    per_category: dict[str, CategoryCoverage] = {}
    for category in sorted(set(planned) | set(measured) | set(failed)):
        plan = max(int(planned.get(category, 0)), measured[category] + failed[category])
        per_category[category] = CategoryCoverage(plan, measured[category], failed[category],
                                                  plan - measured[category] - failed[category],
                                                  _share(measured[category], plan))
    total = sum(c.planned for c in per_category.values())
    done = sum(c.measured for c in per_category.values())
    below = [name for name, c in per_category.items() if c.share is not None and c.share < min_share]
    return PointCoverage(total, done, sum(c.failed for c in per_category.values()),
                         sum(c.missing for c in per_category.values()), _share(done, total), min_share,
                         per_category, below)


__all__ = ["CategoryCoverage", "PointCoverage", "planned_from_records", "point_coverage"]
