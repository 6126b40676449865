"""The board's coverage per category: a config's prompts answered at each load point, by category.

A prompt is answered at a load point when every turn of it has a successful live record there
(a failed record a ``--retry-errors`` rerun superseded is not live). The rules that use these
counts (``coverage.categories``, and the category list of ``coverage.prompts``) are in
:mod:`speedbench.analysis.consistency`.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def answered_by_category(records: Iterable, questions: dict[str, str]) -> dict[str, dict[str, int]]:
    """Per load point, per category: the config's prompts answered (every turn successful)."""
    state: dict[tuple[str, str], bool] = {}
    for r in records:
        if not r.warmup and r.question_id in questions:
            key = (r.run_point, r.question_id)
            state[key] = state.get(key, True) and r.ok
    answered: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (point, qid), ok in state.items():
        answered[point][questions[qid]] += int(ok)
    return answered


def low_categories(answered: dict[str, int], questions: dict[str, str], share: float) -> list[tuple[str, int, int]]:
    """``(category, answered, prompts)`` of each category answering fewer than ``share`` of its prompts."""
    per_category: dict[str, int] = defaultdict(int)
    for category in questions.values():
        per_category[category] += 1
    return [(c, answered.get(c, 0), n) for c, n in sorted(per_category.items()) if answered.get(c, 0) < share * n]


__all__ = ["answered_by_category", "low_categories"]
