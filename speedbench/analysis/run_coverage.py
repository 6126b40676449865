"""Per load point of a run folder: its coverage and its superseded records (``results.json``, the report).

Kept apart from :func:`speedbench.analysis.run_results.analyse_point` on purpose: these fields
describe which request-turns a point's figures stand on, not the figures. For each point
:func:`coverage_fields` gives

- ``coverage``: :class:`speedbench.metrics.coverage.PointCoverage` as a dict (planned, measured,
  failed and missing request-turns, their share, per category, the categories below the bound);
- ``num_superseded`` / ``superseded_by_kind``: failed records a ``--retry-errors`` rerun replaced
  (history in ``records.jsonl``, in no figure), by their ``error_kind``;
- ``flags``: ``coverage_low`` when a category is below ``settings.MIN_CATEGORY_COVERAGE``.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from speedbench.analysis.run_folder import RunFolder
from speedbench.metrics.coverage import PointCoverage, planned_from_records, point_coverage


def run_plan(folder: RunFolder) -> dict[str, int]:
    """Request-turns per category each load point plans: the manifest's, else the records'."""
    planned = (folder.manifest.options or {}).get("planned_turns")
    if isinstance(planned, dict) and planned:
        return {str(k): int(v) for k, v in planned.items()}
    return planned_from_records(folder.measured)


def coverage_flags(coverage: PointCoverage) -> list[str]:
    if not coverage.below:
        return []
    shown = ", ".join(f"{name} {c.measured}/{c.planned}" for name, c in coverage.per_category.items()
                      if name in coverage.below)
    return [f"coverage_low: {len(coverage.below)} categor{'y' if len(coverage.below) == 1 else 'ies'} measured "
            f"less than {coverage.min_share:.0%} of their planned request-turns ({shown}): the figures stand for "
            "the survivors; resume with --retry-errors to measure the failed ones again"]


def coverage_fields(folder: RunFolder, point: str, planned: dict[str, int] | None = None) -> dict[str, Any]:
    """The coverage fields of one load point (module doc)."""
    planned = run_plan(folder) if planned is None else planned
    coverage = point_coverage(folder.point_records(point), planned)
    superseded = Counter(r.error_kind for r in folder.superseded if r.run_point == point and not r.warmup)
    return {"coverage": coverage.to_dict(), "num_superseded": sum(superseded.values()),
            "superseded_by_kind": dict(sorted(superseded.items())), "flags": coverage_flags(coverage)}


__all__ = ["coverage_fields", "coverage_flags", "run_plan"]
