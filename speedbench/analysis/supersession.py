"""Superseded records: a request-turn measured again by ``speedbench run --retry-errors``.

``records.jsonl`` is append-only, so a rerun does not erase the failed record it replaces: it
appends a new record with the same ``record_key`` whose ``supersedes`` says how many records of
that key come before it. The rule every reader holds (the client's resume, the results, the
report, the board):

- a key's records appear in file order with ``supersedes`` 0, 1, 2, ...;
- every record of a key except the last failed (a success is never measured again);
- the last record of each key is *live*: the one every figure reads; the earlier ones are
  *superseded*: history, counted per load point (``num_superseded``) and in no figure.

A duplicate that breaks the rule (two successes, a ``supersedes`` that does not count the records
before it) is an error naming the key: it is what a bug or a spliced file looks like.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable

from speedbench.records import TurnRecord


class SupersessionError(ValueError):
    """A repeated record that is not a rerun of a failed one (the message names the key)."""


class SupersessionTracker:
    """Records of one file in order, checked one at a time (the board checks each line as it reads)."""

    def __init__(self) -> None:
        self.count: dict[Hashable, int] = {}  # records of each key so far
        self.last_ok: dict[Hashable, bool] = {}

    def problem(self, key: Hashable, supersedes: int, ok: bool) -> str | None:
        """Why the next record (of ``key``) breaks the rule, or None; it is then counted."""
        before = self.count.get(key, 0)
        if before and self.last_ok[key]:
            return f"record {key!r} appears twice (its earlier record succeeded; only failed ones are rerun)"
        if supersedes != before:
            return (f"record {key!r} says it supersedes {supersedes} earlier record(s), but {before} come before it"
                    + (" (a repeated key without supersedes appears twice)" if before and not supersedes else ""))
        self.count[key] = before + 1
        self.last_ok[key] = ok
        return None


def split_superseded(records: Iterable[TurnRecord]) -> tuple[list[TurnRecord], list[TurnRecord]]:
    """``(live, superseded)`` in file order: each key's last record, and the records a rerun replaced.
    Raises :class:`SupersessionError` when a repeated key breaks the rule (module doc)."""
    records = list(records)
    tracker = SupersessionTracker()
    last: dict[str, int] = {}
    for index, record in enumerate(records):
        problem = tracker.problem(record.record_key, int(record.supersedes or 0), record.ok)
        if problem:
            raise SupersessionError(problem)
        last[record.record_key] = index
    live_index = set(last.values())
    live = [r for i, r in enumerate(records) if i in live_index]
    superseded = [r for i, r in enumerate(records) if i not in live_index]
    return live, superseded


__all__ = ["SupersessionError", "SupersessionTracker", "split_superseded"]
