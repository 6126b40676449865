"""Our own figures of one load point, by the names the peer modules map their figures to.

``our_figures(point)`` reads a ``results.json`` point entry (``speedbench.analysis.run_results``); the
names are those of ``docs/metrics.md``. Acceptance figures come from the point's primary source
(the engine's per-request statistics when every record has them).
"""
from __future__ import annotations

from typing import Any


def _primary(point: dict) -> dict:
    sources = point.get("acceptance") or {}
    return sources.get(point.get("primary_acceptance_source") or "") or {}


def _drafted_al(summary: dict) -> float | None:
    if summary.get("acceptance_length_drafted") is not None:
        return summary["acceptance_length_drafted"]
    return summary.get("acceptance_length") if summary.get("step_kind") == "drafted" else None


def _acceptance(summary: dict) -> dict[str, Any]:
    return {"acceptance_length": summary.get("acceptance_length"),
            "acceptance_length_drafted": _drafted_al(summary),
            "acceptance_length_request_weighted": summary.get("acceptance_length_request_weighted"),
            "tokens_per_decode_step": summary.get("tokens_per_decode_step"),
            "mean_acceptance_rate": summary.get("mean_acceptance_rate"),
            "marginal_acceptance_rate": summary.get("marginal_acceptance_rate"),
            "num_drafted_steps": summary.get("num_drafted_steps"),
            "num_draft_tokens": summary.get("num_draft_tokens"),
            "num_accepted_tokens": summary.get("num_accepted_tokens")}


def _mean(value: Any) -> Any:
    return value.get("mean") if isinstance(value, dict) else value


def _latency(latency: dict) -> dict[str, Any]:
    """Latency and throughput figures of a point's (or one category's) latency summary."""
    figures = {"total_output_tokens": latency.get("total_output_tokens"), "output_tps": latency.get("output_tps"),
               "request_throughput": latency.get("request_throughput"),
               # per-request TPOT, (t_N - t_1) / (tokens - n_1), averaged over requests
               "tpot_request_mean": _mean(latency.get("tpot_request_mean"))}
    for quantity in ("ttft", "e2e", "step_latency", "tpot", "user_tps"):
        stats = latency.get(quantity) or {}
        for stat in ("mean", "p50", "p99"):
            figures[f"{quantity}_{stat}"] = stats.get(stat)
    return figures


def our_figures(point: dict) -> dict[str, Any]:
    """Acceptance, counts, latency and throughput of one point, by our names."""
    return {**_acceptance(_primary(point)), **_latency(point.get("latency") or {}),
            "num_requests": (point.get("totals") or {}).get("ok"),
            "acceptance_source": point.get("primary_acceptance_source")}


def our_category_figures(point: dict) -> dict[str, dict[str, Any]]:
    """Acceptance figures of the primary source and latency figures, per category; ``num_requests``
    counts request-turns, as for the whole point."""
    acceptance = _primary(point).get("per_category") or {}
    latency = (point.get("latency") or {}).get("per_category") or {}
    out = {}
    for category in dict.fromkeys([*acceptance, *latency]):
        timing = latency.get(category) or {}
        out[category] = {**_acceptance(acceptance.get(category) or {}), **_latency(timing),
                         "num_requests": timing.get("num_requests")}
    return out


__all__ = ["our_category_figures", "our_figures"]
