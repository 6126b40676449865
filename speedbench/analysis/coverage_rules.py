"""The board's coverage rules over a run's records: how completely a run must cover its config
(``coverage.errors``, ``coverage.turns``, ``coverage.prompts``, ``coverage.categories``), beside the
per-record rules of :mod:`speedbench.analysis.consistency`, whose :class:`Violation` they return.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from speedbench.analysis.category_coverage import answered_by_category, low_categories
from speedbench.analysis.consistency import Violation
from speedbench.settings import MIN_CATEGORY_COVERAGE


@dataclass(frozen=True)
class CoverageThresholds:
    """How completely a run must cover its config: at least 99% of the prompts answered at every
    load point, and at least ``min_category_answered`` (``settings.MIN_CATEGORY_COVERAGE``, 95%) of
    each category's, at most 1% of the measured requests failed, every turn of every answered
    prompt. A failed record a ``--retry-errors`` rerun superseded is history, not a failure."""

    min_answered: float = 0.99
    max_error_share: float = 0.01
    min_category_answered: float = MIN_CATEGORY_COVERAGE


DEFAULT_COVERAGE = CoverageThresholds()


def check_coverage(records: Iterable, expected_prompts: int | None,
                   thresholds: CoverageThresholds = DEFAULT_COVERAGE,
                   questions: dict[str, str] | None = None) -> list[Violation]:
    """Run rules over every non-warmup request-turn of one run (failed ones included).

    ``coverage.errors``: at most ``max_error_share`` failed; ``coverage.turns``: every turn of
    each prompt answered at a load point; ``coverage.prompts``: each load point answers at least
    ``min_answered`` of ``expected_prompts`` (the config's rows; None skips the check); with
    ``questions`` (question id -> category) its message names the categories below
    ``min_category_answered``.
    """
    records = [r for r in records if not r.warmup]
    by_category = answered_by_category(records, questions) if questions else {}
    out: list[Violation] = []
    failed = [r for r in records if not r.ok]
    if records and len(failed) > thresholds.max_error_share * len(records):
        out.append(Violation("coverage.errors", failed[0].record_key, "error",
                             f"{len(failed)} of {len(records)} requests failed "
                             f"(at most {thresholds.max_error_share:.0%})"))
    turns: dict[tuple[str, str], dict[int, bool]] = defaultdict(dict)
    num_turns: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in records:
        turns[(r.run_point, r.question_id)][r.turn_index] = r.ok
        num_turns[(r.run_point, r.question_id)].add(r.num_turns)
    answered: dict[str, int] = defaultdict(int)
    for (point, qid), seen in turns.items():
        counts = num_turns[(point, qid)]
        expected = next(iter(counts))
        if len(counts) > 1 or sorted(seen) != list(range(expected)):
            out.append(Violation("coverage.turns", f"{point}/{qid}", "turn_index",
                                 f"turns {sorted(seen)} of a prompt declaring num_turns {sorted(counts)}"))
        elif all(seen.values()):
            answered[point] += 1
    if expected_prompts:
        for point in sorted({p for p, _ in turns}):
            if answered[point] < thresholds.min_answered * expected_prompts:
                low = low_categories(by_category.get(point, {}), questions, thresholds.min_category_answered) \
                    if questions else []
                where = ("; categories below " + f"{thresholds.min_category_answered:.0%}: "
                         + ", ".join(f"{c} {a}/{n}" for c, a, n in low)) if low else ""
                out.append(Violation("coverage.prompts", point, "question_id",
                                     f"{answered[point]} of the config's {expected_prompts} prompts answered "
                                     f"(at least {thresholds.min_answered:.0%}){where}"))
    return out


def check_category_coverage(records: Iterable, questions: dict[str, str],
                            thresholds: CoverageThresholds = DEFAULT_COVERAGE) -> list[Violation]:
    """``coverage.categories``: at every load point each category of the config (``questions``:
    question id -> category) answers at least ``min_category_answered`` of its prompts (every turn
    successful); the one violation names each category below, with its answered/config counts."""
    answered = answered_by_category(records, questions)
    for point in sorted(answered):
        low = low_categories(answered[point], questions, thresholds.min_category_answered)
        if low:
            shown = ", ".join(f"{c} {a}/{n}" for c, a, n in low)
            return [Violation("coverage.categories", point, "category",
                              f"load point {point}: {len(low)} categor{'y' if len(low) == 1 else 'ies'} answered "
                              f"fewer than {thresholds.min_category_answered:.0%} of their prompts ({shown}); "
                              "resume the run with --retry-errors")]
    return []
