"""aiperf 0.13.0: its figures, from our records, and its ``profile_export_aiperf.json``.

Definitions, read in aiperf 0.13.0 (PyPI ``aiperf``): ``aiperf/metrics/types/spec_decode_metrics.py``,
``aiperf/spec_decode/vllm_adapter.py``, ``aiperf/common/models/spec_decode_models.py``, the latency
metrics in ``aiperf/metrics/types/`` and ``aiperf/dataset/loader/speed_bench.py``:

- Speculative figures come from the engine's **per-request** statistics (0.13 adapts vLLM's
  ``metrics.speculative_decoding``: ``num_spec_steps`` = drafted steps, accepted and draft token
  counts, the histogram). Per request: ``spec_decode_acceptance_length = 1 + accepted / steps``,
  ``spec_decode_draft_acceptance_rate = 100 accepted / drafted``, ``spec_decode_accepted_per_verified
  = (accepted + steps) / (drafted + steps)``; each is reported as a distribution over requests, its
  ``avg`` the request-weighted mean. Over the run: ``spec_decode_token_weighted_acceptance_length =
  1 + sum accepted / sum steps`` (pooled over verify steps) and
  ``spec_decode_overall_draft_acceptance_rate = 100 sum accepted / sum drafted``; totals
  ``total_spec_decode_steps``, ``total_accepted_draft_tokens``, ``total_draft_tokens``.
- Output tokens (``output_sequence_length``) are counted by tokenizing the response text with the
  benchmark's tokenizer unless ``--use-server-token-count``. ``request_latency`` = last content
  response - request start, ``time_to_first_token`` = first content response - start,
  ``inter_token_latency = (request_latency - ttft) / (osl - 1)`` (the first chunk's real token count
  instead of 1 with ``--per-chunk-usage``), ``output_token_throughput_per_user = 1 / ITL`` per
  request, ``output_token_throughput = total osl / benchmark duration``. Exported per metric as
  ``{unit, avg, p1 .. p99, min, max, std}`` (times in ms).
- Against SGLang, its console also shows statistics over time of the scraped ``/metrics`` gauges
  ``sglang:spec_accept_length`` / ``spec_accept_rate`` (``aiperf/exporters/sglang/``): not per request,
  and not computed here.
- The SPEED-Bench loader reads JSONL rows with a 32-character ``question_id``, ``category`` and
  ``messages`` (role/content; the placeholder text refused) and sends every message as a turn
  (``multi_turn``), or only the first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from speedbench.peers.common import TIMING, Figure, PeerView, Request, load_json

TOOL = "aiperf"
VERSION = "aiperf 0.13.0"
SOURCE = "aiperf/metrics/types/spec_decode_metrics.py, aiperf/spec_decode/vllm_adapter.py"
NAME = "aiperf"
EXPORT_FILE = "profile_export_aiperf.json"

FIGURES: tuple[Figure, ...] = (
    Figure("spec_decode_acceptance_length", "mean over requests of 1 + accepted / steps",
           "acceptance_length_request_weighted", same=True),
    Figure("spec_decode_token_weighted_acceptance_length", "1 + sum accepted / sum steps",
           "acceptance_length_drafted", same=True),
    Figure("spec_decode_draft_acceptance_rate", "mean over requests of 100 accepted / drafted", None,
           differs="request-weighted; ours pools accepted / drafted over the point"),
    Figure("spec_decode_overall_draft_acceptance_rate", "100 sum accepted / sum drafted", "mean_acceptance_rate",
           same=True, scale=100.0),
    Figure("spec_decode_accepted_per_verified", "mean over requests of (accepted + steps) / (drafted + steps)", None),
    Figure("total_spec_decode_steps", "sum of per-request drafted steps", "num_drafted_steps", same=True),
    Figure("total_accepted_draft_tokens", "sum of accepted draft tokens", "num_accepted_tokens", same=True),
    Figure("total_draft_tokens", "sum of proposed draft tokens", "num_draft_tokens", same=True),
    Figure("request_count", "successful requests", "num_requests", same=True),
    Figure("total_osl", "sum of output tokens, re-counted from text by default", "total_output_tokens",
           differs="re-counted by tokenizing the text (ours: the engine's ids); equal when the text round-trips"),
    Figure("time_to_first_token", "first content response - start, avg (ms)", "ttft_mean", kind=TIMING,
           scale=1000.0, differs="ours starts at the scheduled send time"),
    Figure("inter_token_latency", "(latency - ttft) / (osl - 1) per request, avg (ms)", "tpot_request_mean",
           kind=TIMING, scale=1000.0, differs="ours divides by the tokens after the first chunk"),
    Figure("request_latency", "last content response - start, avg (ms)", "e2e_mean", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time and ends with the stream"),
    Figure("output_token_throughput", "total osl / benchmark duration", "output_tps", kind=TIMING,
           differs="our run span starts at the first scheduled send"),
)


def spec_decode_figures(accepted, drafted, steps) -> dict[str, float | int | None]:
    """aiperf's speculative figures from per-request counts (arrays of equal length).

    Requests without a verify step carry no record in aiperf (``NoMetricValue``) and are left out.
    """
    a, d, s = (np.asarray(x, dtype=np.float64) for x in (accepted, drafted, steps))
    keep = s > 0
    a, d, s = a[keep], d[keep], s[keep]
    if s.size == 0:
        return {}
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(d > 0, 100 * a / np.where(d > 0, d, 1), np.nan)
    return {"spec_decode_acceptance_length": float(np.mean(1 + a / s)),
            "spec_decode_token_weighted_acceptance_length": float(1 + a.sum() / s.sum()),
            "spec_decode_draft_acceptance_rate": float(np.nanmean(rate)) if np.isfinite(rate).any() else None,
            "spec_decode_overall_draft_acceptance_rate": float(100 * a.sum() / d.sum()) if d.sum() > 0 else None,
            "spec_decode_accepted_per_verified": float(np.mean((a + s) / (d + s))),
            "total_spec_decode_steps": int(s.sum()), "total_accepted_draft_tokens": int(a.sum()),
            "total_draft_tokens": int(d.sum())}


def request_figures(requests: list[Request], output_lengths: list[int]) -> dict[str, Any]:
    """Latency and throughput figures (avg, in ms where a time) for request-turns with their osl."""
    done = [(r, n) for r, n in zip(requests, output_lengths) if r.chunk_s]
    if not done:
        return {"request_count": 0}
    ttft = np.array([r.ttft_s for r, _ in done])
    latency = np.array([r.chunk_s[-1] - r.send_s for r, _ in done])  # last content response
    osl = np.array([n for _, n in done], dtype=np.float64)
    multi = osl >= 2
    itl = (latency[multi] - ttft[multi]) / (osl[multi] - 1)
    duration = max(r.chunk_s[-1] for r, _ in done) - min(r.send_s for r, _ in done)
    return {"request_count": len(done), "total_osl": int(osl.sum()),
            "output_sequence_length": float(osl.mean()),
            "time_to_first_token": float(ttft.mean() * 1000), "request_latency": float(latency.mean() * 1000),
            "inter_token_latency": float(itl.mean() * 1000) if itl.size else None,
            "output_token_throughput_per_user": float(np.mean(1 / itl[itl > 0])) if (itl > 0).any() else None,
            "output_token_throughput": float(osl.sum() / duration) if duration > 0 else None}


def view(requests: list[Request], engine: str, count_tokens: Callable[[str], int] | None = None) -> PeerView:
    """What aiperf would print for these request-turns (every turn is a request to aiperf).

    ``count_tokens`` re-counts each output from its text, as aiperf does by default; without it the
    engine's count is used (what ``--use-server-token-count`` gives).
    """
    notes = []
    if count_tokens is None:
        lengths = [r.output_tokens for r in requests]
        notes.append("output tokens are the engine's (aiperf --use-server-token-count); by default aiperf "
                     "re-counts them by tokenizing the text")
    else:
        lengths = [count_tokens(r.output_text) for r in requests]
    figures = request_figures(requests, lengths)
    basis = "requests"
    if engine != "vllm":
        notes.append(f"aiperf 0.13 adapts vLLM's per-request statistics only: no speculative figures for engine "
                     f"{engine!r}")
    elif requests and all(r.accepted is not None and r.drafted_steps is not None for r in requests):
        figures.update(spec_decode_figures([r.accepted for r in requests], [r.draft_tokens or 0 for r in requests],
                                           [r.drafted_steps for r in requests]))
        basis = "per-request engine statistics"
    else:
        notes.append("some requests carry no per-request statistics (vllm serve --per-request-spec-decode-metrics)")
    return PeerView(TOOL, VERSION, SOURCE, basis, figures, notes=notes)


def read_result(path: str | Path) -> dict[str, Any]:
    """``profile_export_aiperf.json`` (or a folder holding it): each metric's ``avg`` as the figure."""
    path = Path(path)
    if path.is_dir():
        path = path / EXPORT_FILE
    data = load_json(path, "an aiperf export")
    if not is_result(data):
        raise ValueError(f"{path}: not an aiperf export (no metric objects with 'unit' and 'avg')")
    figures = {key: value.get("avg") for key, value in data.items()
               if isinstance(value, dict) and "unit" in value and "avg" in value}
    meta = {"aiperf_version": data.get("aiperf_version"), "schema_version": data.get("schema_version")}
    return {"tool": NAME, "figures": figures, "meta": meta, "per_category": {}}


def is_result(data: Any) -> bool:
    return isinstance(data, dict) and any(isinstance(v, dict) and "unit" in v and "avg" in v for v in data.values())


__all__ = ["EXPORT_FILE", "FIGURES", "NAME", "SOURCE", "TOOL", "VERSION", "is_result", "read_result",
           "request_figures", "spec_decode_figures", "view"]
