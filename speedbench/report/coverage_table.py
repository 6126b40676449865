"""The report's coverage table: per run, load point and category, the share of the planned
request-turns that were measured, and the failed records a ``--retry-errors`` rerun superseded.

Rows come from each point's ``coverage`` entry (:mod:`speedbench.analysis.run_coverage`, stored in
``results.json`` and recomputed for the report), one row per (run, point, category) plus the
point's ``all`` row; a category below the documented bound (``settings.MIN_CATEGORY_COVERAGE``)
also raises the point's ``coverage_low`` flag.
"""
from __future__ import annotations

from typing import Any


def coverage_rows(details: dict[str, dict], labels: dict[str, str]) -> list[dict[str, Any]]:
    """One row per (run, point, category) from the report's per-point details (``"<run>/<point>"``)."""
    rows = []
    for key, point in details.items():
        coverage = point.get("coverage")
        if not coverage:
            continue
        run = key.rsplit("/", 1)[0]
        base = {"run": run, "label": labels.get(run, run), "point": point.get("run_point"),
                "min_share": coverage.get("min_share")}
        rows.append({**base, "category": "all", **{k: coverage.get(k) for k in
                                                     ("planned", "measured", "failed", "missing", "share")},
                     "below": bool(coverage.get("below")), "superseded": point.get("num_superseded", 0)})
        for category, figures in (coverage.get("per_category") or {}).items():
            rows.append({**base, "category": category, **figures,
                         "below": category in (coverage.get("below") or []), "superseded": None})
    return rows


__all__ = ["coverage_rows"]
