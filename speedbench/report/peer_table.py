"""The report's peer view: per load point, what each peer tool would print for the same traffic.

Rows come from each point's ``peers`` entry (``speedbench.peers.view.peer_views``, stored in
``results.json`` and recomputed for the report), one row per (run, point, tool) with the tool's
headline acceptance figures next to our acceptance length; ``docs/metrics.md`` maps every figure.
"""
from __future__ import annotations

from typing import Any

# The headline figure of each tool (its own key), in the unit it prints.
HEADLINE = {
    "vllm": (("spec_decode_acceptance_length", "AL"), ("spec_decode_acceptance_rate", "acceptance rate (%)"),
             ("spec_decode_per_position_acceptance_rates", "per-position (marginal)")),
    "sglang": (("accept_length", "accept_length"),),
    "llamacpp": (("accept_rate", "accept_rate"), ("avg_pred_t_s", "avg_pred_t/s")),
    "aiperf": (("spec_decode_acceptance_length", "AL (request mean)"),
               ("spec_decode_token_weighted_acceptance_length", "AL (token-weighted)"),
               ("spec_decode_overall_draft_acceptance_rate", "draft acceptance (%)")),
    "specdec": (("Average_AL", "Average_AL (untrimmed, request mean)"),),
}


def _format(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    return str(value)


def peer_rows(details: dict[str, dict], labels: dict[str, str]) -> list[dict[str, Any]]:
    """One row per (run, point, tool) with a peer view; ``details`` maps ``run/point`` to the point."""
    rows = []
    for key, point in details.items():
        run = key.rsplit("/", 1)[0]
        primary = (point.get("acceptance") or {}).get(point.get("primary_acceptance_source") or "") or {}
        for tool, view in (point.get("peers") or {}).items():
            figures = view.get("figures") or {}
            shown = [f"{label} {_format(figures.get(name))}" for name, label in HEADLINE.get(tool, ())
                     if figures.get(name) is not None]
            if not shown:
                continue
            rows.append({"run": run, "label": labels.get(run, run), "point": point["run_point"], "tool": view["tool"],
                         "version": view["version"], "figures": "; ".join(shown), "basis": view.get("basis"),
                         "our_acceptance_length": primary.get("acceptance_length"),
                         "notes": " ".join(view.get("notes") or [])})
    return rows


__all__ = ["HEADLINE", "peer_rows"]
