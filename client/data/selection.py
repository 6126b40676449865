"""Balanced subsets of a config: ``--categories``, ``--per-category`` and a round-robin ``--limit``.

A built config is sorted by category, so "the first N rows" is a biased sample (``--limit 88`` of
the Qualitative split was 80 coding and 8 humanities rows). The subset is taken instead as:

1. ``--categories a,b``: only those categories (a name the config lacks is an error naming the
   option and the config's categories); Throughput configs' categories are their entropy tiers
   (``low_entropy``, ``mixed``, ``high_entropy``);
2. within each category, rows in a seeded order: ascending ``sha256("<seed>\\x1f<question_id>")``
   (``SUBSET_SEED``), which depends on neither the file order nor the other rows;
3. ``--per-category N``: the first N of each category in that order;
4. ``--limit N``: round-robin over the categories in name order, one row from each in turn
   (a category that runs out is skipped), until N rows.

Without any of the three the config is run whole, in file order. :class:`SelectedRows` says what
was taken (rows per category, out of how many): the run manifest records it, and results and the
report say when a run covers only part of its config.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

SUBSET_SEED = 0


class SelectionError(ValueError):
    """A subset option that cannot be applied, naming the option."""


@dataclass(frozen=True)
class Selection:
    """The subset options of ``speedbench run`` (None: not given)."""

    categories: list[str] | None = None
    per_category: int | None = None
    limit: int | None = None
    seed: int = SUBSET_SEED

    @property
    def whole(self) -> bool:
        return self.categories is None and self.per_category is None and self.limit is None


@dataclass
class SelectedRows:
    rows: list
    summary: dict


def _order_key(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}\x1f{question_id}".encode()).hexdigest()


def select(rows: list, selection: Selection, config: str = "") -> SelectedRows:
    """Apply ``selection`` to rows that have ``question_id`` and ``category`` (module doc)."""
    for name in ("per_category", "limit"):
        value = getattr(selection, name)
        if value is not None and value < 1:
            raise SelectionError(f"--{name.replace('_', '-')} {value}: expected a positive integer")
    by_category: dict[str, list] = defaultdict(list)
    for row in rows:
        by_category[row.category].append(row)
    available = sorted(by_category)
    if selection.categories is not None:
        unknown = [c for c in selection.categories if c not in by_category]
        if unknown or not selection.categories:
            raise SelectionError(f"--categories: {', '.join(map(repr, unknown)) or 'none given'} not in config "
                                 f"{config!r} (its categories: {', '.join(available)})")
    if selection.whole:
        return SelectedRows(list(rows), _summary(selection, by_category, by_category, len(rows)))
    chosen = sorted(set(selection.categories)) if selection.categories is not None else available
    queues = {c: sorted(by_category[c], key=lambda r: _order_key(selection.seed, r.question_id)) for c in chosen}
    if selection.per_category is not None:
        queues = {c: q[:selection.per_category] for c, q in queues.items()}
    taken: list = []
    limit = selection.limit if selection.limit is not None else sum(len(q) for q in queues.values())
    depth = 0
    while len(taken) < limit and any(depth < len(q) for q in queues.values()):
        for c in chosen:
            if depth < len(queues[c]) and len(taken) < limit:
                taken.append(queues[c][depth])
        depth += 1
    per = defaultdict(list)
    for row in taken:
        per[row.category].append(row)
    return SelectedRows(taken, _summary(selection, by_category, per, len(rows)))


def _summary(selection: Selection, by_category: dict, taken: dict, config_rows: int) -> dict:
    rows = sum(len(v) for v in taken.values())
    return {
        "categories": selection.categories, "per_category": selection.per_category, "limit": selection.limit,
        "order": "file" if selection.whole else "round_robin", "seed": selection.seed,
        "rows": rows, "config_rows": config_rows, "partial": rows < config_rows,
        "rows_per_category": {c: len(taken.get(c, [])) for c in sorted(by_category)},
        "config_rows_per_category": {c: len(v) for c, v in sorted(by_category.items())},
    }


__all__ = ["SUBSET_SEED", "SelectedRows", "Selection", "SelectionError", "select"]
