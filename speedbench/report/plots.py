"""The report's figures as PNG bytes (matplotlib, Agg backend), drawn from ``ReportData`` tables.

Each function returns ``(png_bytes, caption)`` or ``None`` when the runs hold nothing to plot
(e.g. no speculative run: no acceptance chart). The PNGs are embedded in the HTML as base64
and also written beside it.
"""
from __future__ import annotations

import io
from collections import defaultdict
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from speedbench.report.compute import ReportData  # noqa: E402

Figure = tuple[bytes, str]
_COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    # No creation date in the metadata, so the same data give the same bytes.
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _concurrency_axis(ax, values) -> None:
    """Log2 axis labelled with the concurrency values themselves (1, 2, 4, ...), not powers."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(v) for v in values})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()


def _lowest_point_per_run(rows: list[dict]) -> dict[str, str]:
    """For each run, the point with the lowest concurrency (acceptance does not depend on load)."""
    best: dict[str, tuple] = {}
    for row in rows:
        key = (row.get("requested_concurrency") is None, row.get("requested_concurrency") or 0, row["point"])
        if row["run"] not in best or key < best[row["run"]][0]:
            best[row["run"]] = (key, row["point"])
    return {run: point for run, (_, point) in best.items()}


def acceptance_by_category(data: ReportData) -> Figure | None:
    chosen = _lowest_point_per_run([p for p in data.points if p.get("acceptance_source")])
    rows = [r for r in data.acceptance if chosen.get(r["run"]) == r["point"]]
    if not rows:
        return None
    runs = list(dict.fromkeys(r["run"] for r in rows))
    categories = list(dict.fromkeys(r["category"] for r in rows if r["category"] != "all")) + ["all"]
    labels = {r["run"]: f"{r['label']} / {r['dataset_config']}" for r in rows}
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(min(13, max(6, 0.5 * len(categories) * max(1, len(runs)) + 2)), 4.2),
                           layout="constrained")
    for i, run in enumerate(runs):
        by_cat = {r["category"]: r for r in rows if r["run"] == run}
        xs, ys, lo, hi = [], [], [], []
        for j, category in enumerate(categories):
            row = by_cat.get(category)
            if not row or row["acceptance_length"] is None:
                continue
            xs.append(j + (i - (len(runs) - 1) / 2) * width)
            ys.append(row["acceptance_length"])
            low, high = row["acceptance_length_ci_low"], row["acceptance_length_ci_high"]
            lo.append(row["acceptance_length"] - low if low is not None else 0)
            hi.append(high - row["acceptance_length"] if high is not None else 0)
        ax.bar(xs, ys, width=width, color=_COLORS[i % len(_COLORS)], yerr=[lo, hi], capsize=3,
               label=f"{labels[run]} ({chosen[run]})")
    ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    ax.set_ylabel("acceptance length (tokens / step)")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
    ax.set_title("Acceptance length per category, 95% bootstrap CI")
    ax.legend(fontsize=8, loc="upper left", ncols=min(3, len(runs)))
    return _png(fig), ("Step-weighted acceptance length (AL = 1 + accepted / steps) per category, with 95% "
                       "bootstrap intervals over requests; each run at its lowest concurrency.")


def conditional_acceptance(data: ReportData) -> Figure | None:
    chosen = _lowest_point_per_run([p for p in data.points if p.get("acceptance_source")])
    rows = [r for r in data.position_rates if r["category"] == "all" and chosen.get(r["run"]) == r["point"]]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
    for i, run in enumerate(dict.fromkeys(r["run"] for r in rows)):
        mine = sorted((r for r in rows if r["run"] == run), key=lambda r: r["position"])
        xs = [r["position"] for r in mine]
        color = _COLORS[i % len(_COLORS)]
        ax.plot(xs, [r["conditional_acceptance_rate"] for r in mine], marker="o", color=color,
                label=f"{mine[0]['label']} / {mine[0].get('dataset_config', '?')} ({mine[0]['point']})")
        if all(r["ci_low"] is not None for r in mine):
            ax.fill_between(xs, [r["ci_low"] for r in mine], [r["ci_high"] for r in mine], color=color, alpha=0.2)
    ax.set_xlabel("draft position i")
    ax.set_ylabel("conditional acceptance AR_i")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(sorted({r["position"] for r in rows}))
    ax.set_title("Per-position conditional acceptance, all categories")
    ax.legend(fontsize=8)
    return _png(fig), ("AR_i = P(>= i accepted) / P(>= i-1 accepted), with 95% bootstrap bands; "
                       "AL = 1 + sum_i prod_{j<=i} AR_j.")


def pareto_curves(data: ReportData) -> Figure | None:
    rows = [p for p in data.points if p.get("output_tps") and p.get("user_tps_mean") and p.get("requested_concurrency")]
    buckets = sorted({r["dataset_config"] for r in rows})
    buckets = [b for b in buckets if len({r["requested_concurrency"] for r in rows if r["dataset_config"] == b}) >= 2] or buckets
    if not rows:
        return None
    fig, axes = plt.subplots(1, len(buckets), figsize=(5.2 * len(buckets), 4), squeeze=False, layout="constrained")
    for ax, bucket in zip(axes[0], buckets):
        mine = [r for r in rows if r["dataset_config"] == bucket]
        for i, run in enumerate(dict.fromkeys(r["run"] for r in mine)):
            points = sorted((r for r in mine if r["run"] == run), key=lambda r: r["requested_concurrency"])
            color = _COLORS[i % len(_COLORS)]
            style = "-" if points[0]["speculative"] else "--"
            ax.plot([p["user_tps_mean"] for p in points], [p["output_tps"] for p in points], style, marker="o",
                    color=color, label=points[0]["label"])
            for p in points:
                ax.annotate(f"c={p['requested_concurrency']}", (p["user_tps_mean"], p["output_tps"]),
                            textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
        ax.set_xlabel("user TPS (tokens/s per request, mean)")
        ax.set_ylabel("output TPS (tokens/s, all requests)")
        isl = mine[0]["isl_bucket"]
        ax.set_title(f"{bucket} (ISL {isl})" if isl and isl != bucket else bucket)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Output TPS vs user TPS (c = concurrency)")
    return _png(fig), ("Each point is one concurrency level; up and to the right is better. Solid: speculative "
                       "decoding, dashed: baseline.")


def speedup_by_concurrency(data: ReportData) -> Figure | None:
    rows = data.speedup
    if not rows:
        return None
    groups = defaultdict(list)
    for row in rows:
        groups[(row["dataset_config"], row["sd_label"])].append(row)
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    for i, ((config, label), mine) in enumerate(sorted(groups.items())):
        mine = sorted(mine, key=lambda r: r["concurrency"])
        color = _COLORS[i % len(_COLORS)]
        xs = [r["concurrency"] for r in mine]
        ax.plot(xs, [r["measured_speedup"] for r in mine], marker="o", color=color, label=f"{label} on {config}: measured")
        est = [(r["concurrency"], r["estimated_speedup"]) for r in mine if r["estimated_speedup"] is not None]
        if est:
            ax.plot([e[0] for e in est], [e[1] for e in est], marker="s", linestyle="--", color=color,
                    label=f"{label} on {config}: Appendix-G estimate")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    _concurrency_axis(ax, [r["concurrency"] for r in rows])
    ax.set_xlabel("concurrency (requested)")
    ax.set_ylabel("speedup over baseline")
    ax.set_title("Measured speedup (output TPS ratio) and Appendix-G estimate")
    ax.legend(fontsize=7)
    return _png(fig), "Measured: output TPS with SD / without. Estimate: S = t_ar * AL / t_sd (Appendix G)."


def speedup_per_category(data: ReportData) -> Figure | None:
    """Latency speedup per category (bars, 95% CI) and the Appendix-G estimate (diamonds), per concurrency."""
    rows = data.speedup_by_category
    if not rows:
        return None
    first = (rows[0]["dataset_config"], rows[0]["sd_run"])  # one SD run and config per figure: the first
    rows = [r for r in rows if (r["dataset_config"], r["sd_run"]) == first]
    categories = list(dict.fromkeys(r["category"] for r in rows))
    levels = sorted({r["concurrency"] for r in rows})
    width = 0.8 / len(levels)
    fig, ax = plt.subplots(figsize=(min(13, max(6, 0.6 * len(categories) * len(levels) + 2)), 4.2),
                           layout="constrained")
    for j, level in enumerate(levels):
        mine = {r["category"]: r for r in rows if r["concurrency"] == level}
        xs = [i + (j - (len(levels) - 1) / 2) * width for i, c in enumerate(categories) if c in mine]
        chosen = [mine[c] for c in categories if c in mine]
        values = [r["latency_speedup"] for r in chosen]
        errors = [[max(0.0, v - (r["latency_speedup_ci_low"] if r["latency_speedup_ci_low"] is not None else v))
                   for v, r in zip(values, chosen)],
                  [max(0.0, (r["latency_speedup_ci_high"] if r["latency_speedup_ci_high"] is not None else v) - v)
                   for v, r in zip(values, chosen)]]
        color = _COLORS[j % len(_COLORS)]
        ax.bar(xs, values, width=width * 0.9, yerr=errors, capsize=3, color=color, alpha=0.8,
               label=f"c={level}: measured (latency)")
        estimated = [(x, r["estimated_speedup"]) for x, r in zip(xs, chosen) if r.get("estimated_speedup") is not None]
        if estimated:
            ax.plot([e[0] for e in estimated], [e[1] for e in estimated], "D", color="black", markersize=4,
                    label="Appendix-G estimate" if j == 0 else None)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    ax.set_ylabel("speedup over baseline")
    ax.set_title(f"Speedup per category: {rows[0]['sd_label']} on {first[0]}")
    ax.legend(fontsize=7)
    return _png(fig), ("Latency speedup per category (sum of baseline E2E / sum of SD E2E over paired requests, "
                       "95% paired-bootstrap CI) and the Appendix-G estimate t_ar * AL_category / t_sd.")


def latency_percentiles(data: ReportData) -> Figure | None:
    rows = [p for p in data.points if p.get("requested_concurrency") and p.get("ttft_p50_s") is not None]
    if not rows:
        return None
    quantities = [("ttft", "TTFT"), ("step_latency", "step latency"), ("tpot", "TPOT"), ("e2e", "E2E")]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), layout="constrained")
    series = list(dict.fromkeys((r["run"], r["label"], r["dataset_config"]) for r in rows))
    for ax, (key, title) in zip(axes, quantities):
        for i, (run, label, config) in enumerate(series):
            mine = sorted((r for r in rows if r["run"] == run), key=lambda r: r["requested_concurrency"])
            color = _COLORS[i % len(_COLORS)]
            xs = [r["requested_concurrency"] for r in mine]
            ax.plot(xs, [1e3 * (r[f"{key}_p50_s"] or 0) for r in mine], marker="o", color=color, label=f"{label} / {config} p50")
            ax.plot(xs, [1e3 * (r[f"{key}_p99_s"] or 0) for r in mine], marker="^", linestyle=":", color=color,
                    label=f"{label} / {config} p99")
        _concurrency_axis(ax, [r["requested_concurrency"] for r in rows])
        ax.set_title(f"{title} (ms)")
        ax.set_xlabel("concurrency")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6)
    return _png(fig), "p50 (solid) and p99 (dotted) per concurrency; step latency excludes TTFT."


def achieved_concurrency(data: ReportData) -> Figure | None:
    rows = [p for p in data.points if p.get("requested_concurrency") and p.get("achieved_concurrency") is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(4.6, 4), layout="constrained")
    top = max(max(r["requested_concurrency"] for r in rows), max(r["achieved_concurrency"] for r in rows))
    ax.plot([0, top], [0, top], color="grey", linestyle=":", label="achieved = requested")
    for i, run in enumerate(dict.fromkeys(r["run"] for r in rows)):
        mine = sorted((r for r in rows if r["run"] == run), key=lambda r: r["requested_concurrency"])
        ax.plot([r["requested_concurrency"] for r in mine], [r["achieved_concurrency"] for r in mine], marker="o",
                color=_COLORS[i % len(_COLORS)], label=f"{mine[0]['label']} / {mine[0]['dataset_config']}")
    ax.set_xlabel("requested concurrency")
    ax.set_ylabel("achieved (Little's law)")
    ax.set_title("Achieved vs requested concurrency")
    ax.legend(fontsize=6)
    return _png(fig), "Achieved concurrency = sum of E2E latencies / run span (Little's law)."


def best_draft_length(data: ReportData) -> Figure | None:
    if not data.best_draft_length:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
    for i, config in enumerate(sorted({r["dataset_config"] for r in data.best_draft_length})):
        rows = sorted((r for r in data.best_draft_length if r["dataset_config"] == config), key=lambda r: r["concurrency"])
        ax.plot([r["concurrency"] for r in rows], [r["best_draft_length"] for r in rows], marker="o",
                color=_COLORS[i % len(_COLORS)], label=config)
    _concurrency_axis(ax, [r["concurrency"] for r in data.best_draft_length])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("best draft length K (0 = no SD)")
    ax.set_title("Draft length with the highest output TPS")
    ax.legend(fontsize=8)
    return _png(fig), "For each batch size, the draft length whose run had the highest output TPS."


def phase_acceptance(data: ReportData) -> Figure | None:
    """AL per phase (bars with CI) and AR_i per phase (lines), each run at its lowest-concurrency point."""
    phases = data.phases or {}
    rows = [r for r in phases.get("rows") or [] if r["acceptance_length"] is not None]
    chosen = _lowest_point_per_run([{**r, "requested_concurrency": _concurrency(data, r)} for r in rows])
    rows = [r for r in rows if chosen.get(r["run"]) == r["point"]]
    if not rows:
        return None
    runs = list(dict.fromkeys(r["run"] for r in rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        color = _COLORS[i % len(_COLORS)]
        mine = {r["phase"]: r for r in rows if r["run"] == run}
        xs = [j + (i - (len(runs) - 1) / 2) * width for j, name in enumerate(("thinking", "answer")) if name in mine]
        values = [mine[name] for name in ("thinking", "answer") if name in mine]
        errors = [[v["acceptance_length"] - (v["acceptance_length_ci_low"] or v["acceptance_length"]) for v in values],
                  [(v["acceptance_length_ci_high"] or v["acceptance_length"]) - v["acceptance_length"] for v in values]]
        left.bar(xs, [v["acceptance_length"] for v in values], width=width, color=color, yerr=errors, capsize=3,
                 label=f"{values[0]['label']} ({chosen[run]})")
        for name, style in (("thinking", "-"), ("answer", "--")):
            rates = sorted((p for p in phases.get("position_rates") or [] if p["run"] == run
                            and p["point"] == chosen[run] and p["phase"] == name), key=lambda p: p["position"])
            if rates:
                right.plot([p["position"] for p in rates], [p["conditional_acceptance_rate"] for p in rates],
                           linestyle=style, marker="o", color=color, label=f"{values[0]['label']} {name}")
    left.set_xticks([0, 1], ["thinking", "answer"])
    left.set_ylabel("acceptance length (tokens / step)")
    left.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    left.set_title("AL per phase, 95% bootstrap CI")
    left.legend(fontsize=8)
    right.set_xlabel("draft position i")
    right.set_ylabel("conditional acceptance AR_i")
    right.set_ylim(0, 1.05)
    right.set_xticks(sorted({p["position"] for p in phases.get("position_rates") or []}))
    right.set_title("Per-position acceptance per phase")
    right.legend(fontsize=8)
    return _png(fig), ("Thinking (up to and including the boundary) vs answer; the step spanning the boundary "
                       "counts as thinking. Solid: thinking, dashed: answer.")


def _concurrency(data: ReportData, row: dict) -> int | None:
    return next((p.get("requested_concurrency") for p in data.points
                 if p["run"] == row["run"] and p["point"] == row["point"]), None)


FIGURES = {
    "acceptance_by_category": acceptance_by_category,
    "conditional_acceptance": conditional_acceptance,
    "pareto": pareto_curves,
    "speedup": speedup_by_concurrency,
    "speedup_by_category": speedup_per_category,
    "best_draft_length": best_draft_length,
    "latency": latency_percentiles,
    "concurrency": achieved_concurrency,
    "phases": phase_acceptance,
}


def draw_all(data: ReportData) -> dict[str, Figure]:
    figures: dict[str, Any] = {}
    for name, draw in FIGURES.items():
        figure = draw(data)
        if figure is not None:
            figures[name] = figure
    return figures
