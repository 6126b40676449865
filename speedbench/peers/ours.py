"""Our own figures of one load point, by the names the peer modules map their figures to.

``our_figures(point)`` reads a ``results.json`` point (:class:`speedbench.analysis.results_types.PointFigures`,
computed by ``speedbench.analysis.run_results``); the names are those of ``docs/metrics.md``.
Acceptance figures come from the point's primary source (the engine's per-request statistics
when every record has them).
"""
from __future__ import annotations

from typing import Any

from speedbench.analysis.results_types import AcceptanceFigures, LatencyFigures, PointFigures, Spread


def _acceptance(summary: AcceptanceFigures) -> dict[str, Any]:
    return {"acceptance_length": summary.acceptance_length,
            "acceptance_length_drafted": summary.drafted_al,
            "acceptance_length_request_weighted": summary.acceptance_length_request_weighted,
            "tokens_per_decode_step": summary.tokens_per_decode_step,
            "mean_acceptance_rate": summary.mean_acceptance_rate,
            "marginal_acceptance_rate": summary.marginal_acceptance_rate,
            "num_drafted_steps": summary.num_drafted_steps,
            "num_draft_tokens": summary.num_draft_tokens,
            "num_accepted_tokens": summary.num_accepted_tokens}


def _latency(latency: LatencyFigures) -> dict[str, Any]:
    """Latency and throughput figures of a point's (or one category's) latency summary."""
    tpot = latency.tpot_request_mean
    figures = {"total_output_tokens": latency.total_output_tokens, "output_tps": latency.output_tps,
               "request_throughput": latency.request_throughput,
               # per-request TPOT, (t_N - t_1) / (tokens - n_1), averaged over requests
               "tpot_request_mean": tpot.mean if isinstance(tpot, Spread) else tpot}
    for quantity in ("ttft", "e2e", "step_latency", "tpot", "user_tps"):
        stats = latency.spread(quantity)
        for stat in ("mean", "p50", "p99"):
            figures[f"{quantity}_{stat}"] = getattr(stats, stat)
    return figures


def our_figures(point: PointFigures) -> dict[str, Any]:
    """Acceptance, counts, latency and throughput of one point, by our names."""
    return {**_acceptance(point.primary or AcceptanceFigures()), **_latency(point.timing),
            "num_requests": point.totals.ok, "acceptance_source": point.primary_acceptance_source}


def our_category_figures(point: PointFigures) -> dict[str, dict[str, Any]]:
    """Acceptance figures of the primary source and latency figures, per category; ``num_requests``
    counts request-turns, as for the whole point."""
    acceptance = (point.primary or AcceptanceFigures()).per_category
    latency = point.timing.per_category
    out = {}
    for category in dict.fromkeys([*acceptance, *latency]):
        timing = latency.get(category) or LatencyFigures()
        out[category] = {**_acceptance(acceptance.get(category) or AcceptanceFigures()), **_latency(timing),
                         "num_requests": timing.num_requests}
    return out


__all__ = ["our_category_figures", "our_figures"]
