"""Write the report: self-contained HTML (plots embedded as base64 PNG), Markdown, CSV, JSON."""
from __future__ import annotations

import base64
import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from speedbench.report.compute import ReportData
from speedbench.report.phases import phase_summary_lines
from speedbench.report.tables import TABLES, format_value

TEMPLATE_DIR = Path(__file__).with_name("templates")


@dataclass
class ReportFiles:
    html: Path
    markdown: Path
    json: Path
    csv: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    data: ReportData | None = None


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = format_value
    return env


def summary_lines(data: ReportData) -> list[str]:
    """The headline numbers, one line each (also printed by ``speedbench report`` and the demo)."""
    lines = []
    for row in data.acceptance:
        if row["category"] == "all":
            lines.append(f"AL {row['label']} on {row['dataset_config']} {row['point']}: "
                         f"{format_value(row['acceptance_length'])} "
                         f"[{format_value(row['acceptance_length_ci_low'])}, {format_value(row['acceptance_length_ci_high'])}]"
                         f" over {row['num_requests']} requests")
    for row in data.speedup:
        estimate = format_value(row["estimated_speedup"], "x")
        lines.append(f"speedup {row['sd_label']} on {row['dataset_config']} c={row['concurrency']}: measured "
                     f"{format_value(row['measured_speedup'], 'x')}, Appendix-G estimate {estimate}")
    for row in data.losslessness:
        lines.append(f"lossless {row['sd_label']} vs {row['baseline_label']} {row['point']}: "
                     f"{row['num_identical']} of {row['num_compared']} outputs identical")
    for row in data.best_draft_length:
        lines.append(f"best K on {row['dataset_config']} at c={row['concurrency']}: {row['best_draft_length']}")
    lines += phase_summary_lines(data.phases, {run["run"]: run["label"] for run in data.runs})
    counts: dict[str, int] = {}
    for flag in data.flags:
        counts[flag["flag"]] = counts.get(flag["flag"], 0) + int(flag.get("count") or 0)
    lines.append("flags: " + (", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "none"))
    return lines


def render_markdown(data: ReportData, figure_files: dict[str, str]) -> str:
    out = [f"# {data.title}", ""]
    out += ["## Summary", ""] + [f"- {line}" for line in summary_lines(data)] + [""]
    for table in TABLES:
        rows = table.cells(data)
        if not rows:
            continue
        out += [f"## {table.title}", ""]
        if table.note:
            out += [table.note, ""]
        out.append("| " + " | ".join(c.header for c in table.columns) + " |")
        out.append("|" + "---|" * len(table.columns))
        for row in rows:
            out.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |")
        out.append("")
    if figure_files:
        out += ["## Figures", ""] + [f"![{name}]({path})" for name, path in figure_files.items()] + [""]
    out += ["## Provenance", "", "```json", json.dumps(data.provenance, indent=1, sort_keys=True, default=str), "```", ""]
    return "\n".join(out)


def render_html(data: ReportData, figures: dict[str, tuple[bytes, str]]) -> str:
    embedded = {name: {"src": "data:image/png;base64," + base64.b64encode(png).decode("ascii"), "caption": caption}
                for name, (png, caption) in figures.items()}
    tables = {t.name: {"title": t.title, "note": t.note, "headers": [c.header for c in t.columns], "rows": t.cells(data)}
              for t in TABLES}
    return _environment().get_template("report.html.jinja").render(
        title=data.title, summary=summary_lines(data), tables=tables, figures=embedded, runs=data.provenance["runs"],
        versions=data.provenance["versions"], options=data.options,
        provenance_json=json.dumps(data.provenance, indent=1, sort_keys=True, default=str))


def write_report(data: ReportData, figures: dict[str, tuple[bytes, str]], out_dir: Path) -> ReportFiles:
    out_dir = Path(out_dir)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    files = ReportFiles(html=out_dir / "report.html", markdown=out_dir / "report.md", json=out_dir / "report.json",
                        data=data)
    relative = {}
    for name, (png, _) in figures.items():
        path = out_dir / "figures" / f"{name}.png"
        path.write_bytes(png)
        files.figures[name] = path
        relative[name] = f"figures/{name}.png"
    files.json.write_text(json.dumps(data.to_dict(), indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    files.markdown.write_text(render_markdown(data, relative), encoding="utf-8")
    files.html.write_text(render_html(data, figures), encoding="utf-8")
    for table in TABLES:
        rows = table.rows(data)
        if not rows:
            continue
        # CSV keeps every field of the table's rows at full precision (the HTML/Markdown round).
        keys = list(dict.fromkeys(key for row in rows for key in row))
        path = out_dir / f"{table.name}.csv"
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(keys)
        for row in rows:
            writer.writerow(["" if row.get(k) is None else
                             (json.dumps(row[k], sort_keys=True) if isinstance(row[k], (dict, list)) else row[k])
                             for k in keys])
        path.write_text(buffer.getvalue(), encoding="utf-8")
        files.csv[table.name] = path
    return files
