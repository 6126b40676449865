"""Rows of the report's tables (``report.json``, the CSV files) as typed sections, for the readers
that read them by attribute (``speedbench.sweep.views``).

Each class declares the columns its readers use; the other columns are kept in their place
(:class:`speedbench.analysis.results_types.Section`), so ``Row.from_dict(row).to_dict()`` is the
row as the report wrote it, key for key. ``from_dict(row, where)`` raises
:class:`~speedbench.analysis.results_types.ResultsFormatError` naming the table, row and column
when a declared column has the wrong type. The rows themselves are built as dicts by
:func:`speedbench.report.compute.compute_report` (its writers, plots and templates read them by
column name).

Adding a column a reader needs: declare it here with its type and a default when some rows lack it.
"""
from __future__ import annotations

from dataclasses import dataclass

from speedbench.analysis.results_types import Section


@dataclass
class ReportRow(Section):
    """Any row of a table keyed by run (``runs``, ``acceptance``)."""

    run: str


@dataclass
class PointRow(ReportRow):
    """A row of ``points``: one load point of one run (``compute.point_row``)."""

    dataset_config: str | None = None
    requested_concurrency: float | None = None
    request_rate: float | None = None
    output_tps: float | None = None
    user_tps_mean: float | None = None


@dataclass
class PositionRateRow(ReportRow):
    """A row of ``position_rates``: the conditional acceptance rate at one draft position."""

    point: str
    category: str
    position: int
    source: str | None = None
    conditional_acceptance_rate: float | None = None


@dataclass
class SpeedupRow(Section):
    """A row of ``speedup`` (one SD load point against one baseline run at its concurrency) or of
    ``speedup_by_category`` (the same pair, one category)."""

    sd_run: str
    baseline_run: str
    concurrency: float | None = None
    measured_speedup: float | None = None
    estimated_speedup: float | None = None


def read_rows(cls: type[Section], rows: list[dict], table: str) -> list:
    """The rows of ``table`` as ``cls`` (an error names ``report <table>[i].<column>``)."""
    return [cls.from_dict(row, f"report {table}[{i}]") for i, row in enumerate(rows)]
