"""The whole sweep's report: ``speedbench report`` over every run folder, plus the sweep's view.

``OUT/report/`` is exactly what ``speedbench report OUT/runs/*`` writes (the same functions on
the same folders). ``OUT/sweep.html`` / ``sweep.md`` / ``sweep.json`` add, from that report's own
figures (``speedbench.sweep.views``): the variants and what became of them, AL per category and
per-position rates per variant, speedup of each variant over the baseline it declared, the best
draft length per batch size with its median and spread over repeats, random-token vs real-text
throughput, and a Pareto figure per workload (throughput per GPU vs per-user speed, baselines
dashed). Every file records what produced it (plan hash, versions, run folders).
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedbench.settings import NUM_RESAMPLES
from speedbench.sweep.plan import Plan
from speedbench.sweep.units import Unit

FIGURES_DIR = "figures"
REPORT_DIR = "report"


@dataclass
class SweepFiles:
    html: Path
    markdown: Path
    json: Path
    report_html: Path | None
    figures: list[Path] = field(default_factory=list)
    bundles: list[Path] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


POSITIONS = "AR_*"  # in a column list: one column per draft position present in the rows

# (title, key in the views, columns) -- defined once for Markdown and HTML
TABLES = [
    ("Variants", "variants", ["variant", "engine", "method", "draft_length", "baseline", "gpus", "runs",
                              "planned_runs", "server"]),
    ("Best draft length per batch size (0 = no speculation)", "best_draft_length",
     ["workload", "variants", "baseline", "concurrency", "best_draft_length", "best_median_output_tps", "best_mad",
      "repeats", "note", "runner_up_draft_length", "runner_up_median_output_tps", "runner_up_mad"]),
    ("Draft schedule vs the best static K and the baseline (medians over repeats; K = the schedule's K at that "
     "batch size)", "schedule",
     ["workload", "variant", "concurrency", "draft_schedule", "schedule_k", "schedule_output_tps", "schedule_user_tps",
      "best_static_k", "best_static_output_tps", "best_static_user_tps", "baseline_output_tps", "baseline_user_tps",
      "repeats"]),
    ("Speedup over the declared baseline (median over repeats)", "speedup_medians",
     ["workload", "variant", "baseline", "concurrency", "repeats", "measured_speedup_median",
      "estimated_speedup_median"]),
    ("Speedup per repeat (rows of `speedbench report`)", "speedup",
     ["workload", "variant", "baseline", "repeat", "concurrency", "output_tps_baseline", "output_tps_sd",
      "measured_speedup", "estimated_speedup", "acceptance_length"]),
    ("Speedup per category over the declared baseline (rows of `speedbench report`)", "speedup_by_category",
     ["workload", "variant", "baseline", "repeat", "concurrency", "category", "num_paired", "latency_speedup",
      "decode_speedup", "estimated_speedup"]),
    ("Random-token vs real-text throughput", "random_vs_real",
     ["variant", "isl_bucket", "concurrency", "output_tps_random", "output_tps_real", "overestimate"]),
    ("Acceptance length per category", "acceptance",
     ["variant", "workload", "repeat", "point", "category", "acceptance_length", "acceptance_length_ci_low",
      "acceptance_length_ci_high", "num_requests"]),
    ("Conditional acceptance per draft position and category (AR_i: at position i)", "position_rates",
     ["variant", "workload", "repeat", "point", "category", "source", POSITIONS]),
    ("Pareto points (medians over repeats)", "pareto",
     ["workload", "variant", "load", "output_tps_per_gpu", "user_tps", "repeats"]),
]


def _columns(columns: list[str], rows: list[dict]) -> list[str]:
    positions = sorted({int(k[3:]) for r in rows for k in r if k.startswith("AR_")})
    return [name for c in columns for name in ([f"AR_{i}" for i in positions] if c == POSITIONS else [c])]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def markdown(views: dict, title: str, failures: dict[str, str], figures: list[Path]) -> str:
    lines = [f"# {title}", ""]
    if failures:
        lines += ["## Failures", ""] + [f"- **{k}**: {v.splitlines()[0]}" for k, v in failures.items()] + [""]
    for heading, key, columns in TABLES:
        rows = views.get(key) or []
        if not rows:
            continue
        columns = _columns(columns, rows)
        lines += [f"## {heading}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows] + [""]
    lines += [f"![{p.stem}]({FIGURES_DIR}/{p.name})" for p in figures]
    return "\n".join(lines) + "\n"


def pareto_figures(views: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for workload in sorted({p["workload"] for p in views["pareto"]}):
        rows = [p for p in views["pareto"] if p["workload"] == workload and p["user_tps"]
                and p["output_tps_per_gpu"] is not None]
        if not rows:
            continue
        figure, axes = plt.subplots(figsize=(6.4, 4.4))
        for variant in sorted({r["variant"] for r in rows}):
            mine = sorted((r for r in rows if r["variant"] == variant), key=lambda r: r["load"] or 0)
            (line,) = axes.plot([r["user_tps"] for r in mine], [r["output_tps_per_gpu"] for r in mine], marker="o",
                                linestyle="-" if mine[0]["speculative"] else "--", label=variant)
            for r in mine:  # beside the marker, not on it
                axes.annotate(r["load_label"], (r["user_tps"], r["output_tps_per_gpu"]), xytext=(4, 4),
                              textcoords="offset points", fontsize=8, color=line.get_color())
        axes.set_xlabel("per-user speed (output tokens/s per request)")
        axes.set_ylabel("throughput per GPU (output tokens/s)")
        axes.grid(alpha=0.3)
        axes.margins(x=0.1, y=0.1)  # room for the labels of the outermost points
        config = rows[0]["dataset_config"]
        legend = "c = concurrency" + (", /s = request rate" if any("/s" in r["load_label"] for r in rows) else "")
        axes.set_title(f"{workload}{f' ({config})' if config != workload else ''}: {legend}")
        axes.legend(fontsize=8)
        figure.tight_layout()
        path = out / FIGURES_DIR / f"pareto-{workload}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def html(views: dict, title: str, failures: dict[str, str], figures: list[Path], provenance: dict) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("speedbench.sweep", "templates"), autoescape=select_autoescape())
    env.filters["cell"] = _cell
    tables = [(heading, _columns(columns, views.get(key) or []), views.get(key) or [])
              for heading, key, columns in TABLES]
    images = [(p.stem, base64.b64encode(p.read_bytes()).decode()) for p in figures]
    return env.get_template("sweep.html.jinja").render(title=title, failures=failures, tables=tables,
                                                        images=images, provenance=provenance)


def summary_lines(views: dict, failures: dict[str, str]) -> list[str]:
    lines = []
    for row in views["best_draft_length"]:
        lines.append(f"best K at concurrency {row['concurrency']} ({row['workload']}, {row['variants']}): "
                     f"K={row['best_draft_length']} ({row['best_median_output_tps']:.1f} tokens/s median over "
                     f"{row['repeats']} repeats); {row['note']}")
    for row in views.get("schedule") or []:
        lines.append(f"schedule {row['variant']} ({row['workload']}, c={row['concurrency']}, K={row['schedule_k']}): "
                     f"{_cell(row['schedule_output_tps'])} tokens/s, {_cell(row['schedule_user_tps'])} per user; best "
                     f"static K={row['best_static_k']}: {_cell(row['best_static_output_tps'])}; baseline: "
                     f"{_cell(row['baseline_output_tps'])}")
    for row in views["speedup_medians"]:
        measured = row["measured_speedup_median"]
        lines.append(f"speedup {row['variant']} over {row['baseline']} ({row['workload']}, c={row['concurrency']}): "
                     + (f"{measured:.3f}x measured" if measured is not None else "not measured"))
    for row in views["random_vs_real"]:
        if row["overestimate"] is not None:
            lines.append(f"random vs real text ({row['variant']}, {row['isl_bucket']}, c={row['concurrency']}): "
                         f"random-token throughput {row['overestimate']:+.1%} vs real text")
    lines += [f"FAILED {key}: {message.splitlines()[0]}" for key, message in failures.items()]
    return lines


def write_sweep_report(plan: Plan, outcome, out: str | Path, num_resamples: int = NUM_RESAMPLES) -> SweepFiles:
    from speedbench.report import ReportOptions, compute_report, load_runs, write_report
    from speedbench.report import summary_lines as report_lines
    from speedbench.report.plots import draw_all
    from speedbench.sweep.bundles import write_bundles
    from speedbench.sweep.views import speedup_medians, sweep_views

    out = Path(out)
    units: list[Unit] = [u for u in outcome.units if _has_measured(u.run_dir)]
    report_files, data = None, None
    if units:
        options = ReportOptions(num_resamples=num_resamples, title=plan.title)
        data = compute_report(load_runs([u.run_dir for u in units]), options)
        report_files = write_report(data, draw_all(data), out / REPORT_DIR)
    views = sweep_views(plan, units, data) if data else {k: [] for _, k, _ in TABLES}
    views.setdefault("best_draft_length", [])
    views["speedup_medians"] = speedup_medians(views.get("speedup") or [])
    failures = dict(outcome.failed)
    figures = pareto_figures(views, out) if data else []
    provenance = {"generator": "speedbench sweep", "plan": str(plan.path), "plan_sha256": plan.sha256,
                  "report_provenance": data.provenance if data else None,
                  "run_folders": [str(u.run_dir) for u in units]}
    files = SweepFiles(html=out / "sweep.html", markdown=out / "sweep.md", json=out / "sweep.json",
                       report_html=report_files.html if report_files else None, figures=figures)
    files.markdown.write_text(markdown(views, plan.title, failures, figures), encoding="utf-8")
    files.html.write_text(html(views, plan.title, failures, figures, provenance), encoding="utf-8")
    files.bundles = write_bundles(plan, units, out, log=files.summary.append)
    files.json.write_text(json.dumps({"format": "speedbench sweep v1", "title": plan.title, "views": views,
                                      "failures": failures, "bundles": [str(p) for p in files.bundles],
                                      "provenance": provenance}, indent=1, default=str) + "\n", encoding="utf-8")
    files.summary[:0] = (report_lines(data) if data else []) + summary_lines(views, failures)
    return files


def _has_measured(run_dir: Path) -> bool:
    """A run folder the report can read (a variant that never started has none; one interrupted
    before its first measured request has no measured records yet)."""
    from speedbench.analysis.run_folder import RunFolderError, read_run_folder

    if not (run_dir / "manifest.json").exists():
        return False
    try:
        return bool(read_run_folder(run_dir).measured)
    except RunFolderError:
        return False
