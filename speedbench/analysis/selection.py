"""Which records feed the acceptance figures (overall and per category): one rule for every reader.

``results.json`` and the report (one load point of one run), the board's AL and phase figures (an
entry's runs), the Compare tab (two entries' runs) and ``speedbench vocab-coverage`` (one SD run)
all take their records from :func:`acceptance_records`, so a category's AL cannot differ between
them because each chose its records its own way (``tests/report/test_one_path.py`` checks that
they agree, and ``tests/analysis/test_selection.py`` checks the rule on hand-built folders).

The rule, in order:

1. **runs**: of the runs given, those that speculate by role (the board's ``"sd"``; a folder
   without a role, read locally, counts: its caller chose it), and of those the Qualitative split
   (a dataset config without an ISL bucket) when there is one, else every SD run;
2. **point**: one load point's records when ``point`` is given, else every point's;
3. **records**: measured (warmup left out) and successful (failed requests left out), in file
   order.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from speedbench.records import TurnRecord


class Run(Protocol):
    """What the rule reads of a run: :class:`speedbench.analysis.run_folder.RunFolder` (not imported:
    ``RunFolder.records`` is step 3 of this rule, so run_folder imports this module)."""

    role: str | None
    all_records: list[TurnRecord]

    @property
    def isl_bucket(self) -> str | None: ...


R = TypeVar("R", bound=Run)

SD_ROLE = "sd"


def acceptance_runs(runs: Sequence[R]) -> list[R]:
    """Step 1: the SD runs whose records give AL, the Qualitative split when present."""
    sd = [r for r in runs if r.role in (None, SD_ROLE)]
    qualitative = [r for r in sd if r.isl_bucket is None]
    return qualitative or sd


def acceptance_records(runs: Run | Sequence[Run], point: str | None = None) -> list[TurnRecord]:
    """The measured, successful records the acceptance figures are computed from (steps 1-3)."""
    chosen = acceptance_runs([runs] if hasattr(runs, "all_records") else runs)
    return [record for run in chosen for record in successful(run.all_records)
            if point is None or record.run_point == point]


def successful(records: Iterable[TurnRecord]) -> list[TurnRecord]:
    """Step 3, also on records a caller already holds by point (``speedbench run``'s analysis of one point)."""
    return [r for r in records if not r.warmup and r.ok]


__all__ = ["SD_ROLE", "acceptance_records", "acceptance_runs", "successful"]
