"""``speedbench report``: turn run folders into a report people look at.

    from speedbench.report import build_report
    files = build_report(["runs/sd", "runs/baseline"], "report-out")
    files.html  # self-contained page, PNG plots embedded as base64

Modules: ``runs`` reads run folders (with the one reader, :mod:`speedbench.analysis.run_folder`), ``compute`` gets every number from ``speedbench.metrics``,
``plots`` draws the PNGs, ``tables`` defines the tables once for all formats, ``render``
writes HTML / Markdown / CSV / JSON.
"""
from __future__ import annotations

from pathlib import Path

from speedbench.report.compute import ReportData, ReportOptions, compute_report
from speedbench.report.render import ReportFiles, summary_lines, write_report
from speedbench.report.runs import RunFolderError, load_run, load_runs
from speedbench.analysis.run_folder import RunFolder


def build_report(run_dirs: list[str | Path], out_dir: str | Path, options: ReportOptions | None = None) -> ReportFiles:
    """Load the runs, compute the report with ``speedbench.metrics``, draw and write every format."""
    from speedbench.report.plots import draw_all

    data = compute_report(load_runs(run_dirs), options)
    return write_report(data, draw_all(data), Path(out_dir))


__all__ = ["ReportData", "ReportFiles", "ReportOptions", "RunFolder", "RunFolderError", "build_report",
           "compute_report", "load_run", "load_runs", "summary_lines", "write_report"]
