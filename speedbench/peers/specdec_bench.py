"""NVIDIA's specdec_bench (Model-Optimizer ``examples/specdec_bench``): its figures, from our records,
and its output folder.

Definitions, read in ``specdec_bench/metrics/acceptance_rate.py``, ``metrics/specbench.py``,
``metrics/timing.py``, ``metrics/base.py`` and ``datasets/speed.py`` (NVIDIA/Model-Optimizer main,
2026; the reference's main branch checked at a2fbac7, see ``docs/metrics.md``):

- It talks to the engine in-process and takes every streamed update as one step: a turn's *step
  sizes* are the token counts of all its updates, the prefill's lone token and the last update
  included (nothing trimmed), with the EOS token cut from the last update.
- ``Request_AL[question_id]`` = the mean step size over all turns of the request;
  ``Average_AL`` = the mean of ``Request_AL`` over requests (request-weighted, untrimmed);
  ``Category_AL[c]`` = the mean of ``Request_AL`` over the requests of category c.
- ``Acceptance_Length_Histogram`` counts steps by size, pooled; ``Conditional_Acceptance_Rate``
  at each size ``l`` that occurs = ``P(L >= l) / P(L >= l')`` with ``l'`` the next smaller size that
  occurs (1 for the smallest): sizes that never occur are skipped, which merges positions.
- ``timing.json``: per request ``token_times`` = [start, then one time per update]; ``TTFT Time =
  t_1 - t_0``, ``E2E Request Time = t_last - t_0``, ``Request Generation Step Time`` = every
  consecutive gap *including* TTFT, ``Request Generation Tokens Per Second = (tokens - 1) /
  (t_last - t_1)``, ``Output TPS = sum tokens / (max t_last - min t_0)``; statistics as
  min / max / mean / std / quartiles, written as strings with 4 decimals.
- Data: ``datasets.load_dataset("parquet", ...)`` of a prepared ``speed/<config>/test.parquet``
  (``prepare_data.py`` writes it), refusing rows whose turns still hold the placeholder; every turn
  is run, the model's answers put back into the history.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from speedbench.peers.common import TIMING, Figure, PeerView, Request, group_turns

TOOL = "specdec_bench"
VERSION = "NVIDIA Model-Optimizer examples/specdec_bench (main, 2026)"
SOURCE = "specdec_bench/metrics/acceptance_rate.py, specbench.py, timing.py"
NAME = "specdec"
RESULT_FILES = ("specbench_results.json", "acceptance_rate.json")
TIMING_FILE = "timing.json"

FIGURES: tuple[Figure, ...] = (
    Figure("Average_AL", "mean over requests of the mean step size, prefill token and last step kept, EOS cut",
           "acceptance_length_request_weighted",
           differs="untrimmed: the prefill's lone token and the cut-short last chunk count as steps, which "
                   "lowers AL on short outputs; ours drops both (docs/metrics.md, trimming)"),
    Figure("Output TPS", "sum tokens / (max last update - min start)", "output_tps", kind=TIMING,
           differs="EOS tokens excluded; our span starts at the scheduled send"),
    Figure("TTFT Time.mean", "first update - start, mean (s)", "ttft_mean", kind=TIMING,
           differs="ours starts at the scheduled send time"),
    Figure("E2E Request Time.mean", "last update - start, mean (s)", "e2e_mean", kind=TIMING,
           differs="ours starts at the scheduled send time and ends with the stream"),
    Figure("Request Generation Step Time.mean", "all gaps between updates including TTFT, mean (s)",
           "step_latency_mean", kind=TIMING, differs="ours excludes TTFT"),
    Figure("Request Generation Tokens Per Second.mean", "(tokens - 1) / (last update - first update), mean",
           "user_tps_mean", kind=TIMING, differs="EOS excluded from tokens"),
)


def step_sizes(chunk_tokens: list[int], stopped_at_eos: bool) -> list[int]:
    """A turn's step sizes as specdec_bench takes them: every update, the EOS token cut from the last."""
    sizes = [int(n) for n in chunk_tokens if n > 0]
    if stopped_at_eos and sizes:
        sizes[-1] -= 1
        if sizes[-1] == 0:
            sizes.pop()
    return sizes


def request_al(turns: list[list[int]]) -> float | None:
    """Mean step size over all steps of all turns of one request."""
    steps = [s for turn in turns for s in turn]
    return statistics.mean(steps) if steps else None


def size_histogram(turns: list[list[int]]) -> dict[int, int]:
    """Steps counted by size, sizes ascending."""
    counts: dict[int, int] = {}
    for size in (s for turn in turns for s in turn):
        counts[size] = counts.get(size, 0) + 1
    return dict(sorted(counts.items()))


def conditional_rates(histogram: dict[int, int]) -> dict[int, float]:
    """``P(L >= l) / P(L >= l')`` for each size l that occurs, l' the next smaller one (first: 1)."""
    total = sum(histogram.values())
    sizes = sorted(histogram)
    at_least = {size: sum(histogram[s] for s in sizes if s >= size) / total for size in sizes}
    rates, previous = {}, 1.0
    for size in sizes:
        rates[size] = at_least[size] / previous
        previous = at_least[size]
    return rates


def acceptance_figures(turns_by_request: dict[str, list[list[int]]], categories: dict[str, str]) -> dict[str, Any]:
    """Request_AL, Average_AL, Category_AL, the histogram and conditional rates."""
    request = {qid: request_al(turns) for qid, turns in turns_by_request.items()}
    request = {qid: al for qid, al in request.items() if al is not None}
    by_category: dict[str, list[float]] = {}
    for qid, al in request.items():
        by_category.setdefault(categories[qid], []).append(al)
    histogram = size_histogram([t for turns in turns_by_request.values() for t in turns])
    return {"Request_AL": request, "Average_AL": statistics.mean(request.values()) if request else None,
            "Category_AL": {c: statistics.mean(v) for c, v in sorted(by_category.items())},
            "Acceptance_Length_Histogram": histogram,
            "Conditional_Acceptance_Rate": conditional_rates(histogram) if histogram else {}}


def timing_figures(requests: list[Request], tokens: list[int]) -> dict[str, Any]:
    """``timing.json``'s figures (means only) for request-turns and their token counts."""
    times = [[r.send_s] + r.chunk_s for r in requests if r.chunk_s]
    tokens = [n for r, n in zip(requests, tokens) if r.chunk_s]
    if not times:
        return {}
    e2e = [t[-1] - t[0] for t in times if len(t) > 1]
    ttft = [t[1] - t[0] for t in times if len(t) > 1]
    gaps = [b - a for t in times if len(t) > 2 for a, b in zip(t, t[1:])]
    user = [(n - 1) / (t[-1] - t[1]) for t, n in zip(times, tokens) if len(t) > 2 and t[-1] > t[1]]
    span = max(t[-1] for t in times) - min(t[0] for t in times)
    return {"Output TPS": sum(tokens) / span if span > 0 else None,
            "E2E Request Time.mean": float(np.mean(e2e)) if e2e else None,
            "TTFT Time.mean": float(np.mean(ttft)) if ttft else None,
            "Request Generation Step Time.mean": float(np.mean(gaps)) if gaps else None,
            "Request Generation Tokens Per Second.mean": float(np.mean(user)) if user else None}


def view(requests: list[Request], engine: str) -> PeerView:
    """What specdec_bench would write for these request-turns, taking each recorded chunk as an update."""
    turns = {qid: [step_sizes(t.chunk_tokens, t.finish_reason == "stop") for t in group]
             for qid, group in group_turns(requests).items()}
    categories = {r.question_id: r.category for r in requests}
    acceptance = acceptance_figures(turns, categories)
    sizes = [sum(step_sizes(r.chunk_tokens, r.finish_reason == "stop")) for r in requests]
    figures = {"Average_AL": acceptance["Average_AL"], **timing_figures(requests, sizes),
               "Acceptance_Length_Histogram": acceptance["Acceptance_Length_Histogram"],
               "Conditional_Acceptance_Rate": acceptance["Conditional_Acceptance_Rate"]}
    notes = ["every recorded chunk is taken as one update; in-process, specdec_bench sees one update per engine "
             "step, so chunks merged by an HTTP frontend lower its step count",
             "EOS is cut from the last chunk of every request that finished with 'stop'"]
    return PeerView(TOOL, VERSION, SOURCE, "chunks", figures,
                    per_category={c: {"Category_AL": v} for c, v in acceptance["Category_AL"].items()}, notes=notes)


def _timing_means(entry: dict) -> dict[str, Any]:
    out = {}
    for key, value in entry.items():
        if isinstance(value, dict) and "mean" in value:
            out[f"{key}.mean"] = float(value["mean"])
        elif isinstance(value, (int, float, str)) and key == "Output TPS":
            out[key] = float(value)
    return out


def _last(data: Any) -> Any:
    return data[-1] if isinstance(data, list) and data else data


def read_result(path: str | Path) -> dict[str, Any]:
    """A specdec_bench output folder: ``specbench_results.json`` (or the last entry of
    ``acceptance_rate.json``) and the last entry of ``timing.json`` when present."""
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    found = next((folder / name for name in RESULT_FILES if (folder / name).exists()), None)
    if found is None:
        raise ValueError(f"{folder}: not a specdec_bench output folder (none of {', '.join(RESULT_FILES)})")
    try:
        acceptance = _last(json.loads(found.read_text(encoding="utf-8")))
        timing = _last(json.loads((folder / TIMING_FILE).read_text(encoding="utf-8"))) \
            if (folder / TIMING_FILE).exists() else {}
    except (OSError, json.JSONDecodeError, ValueError) as error:
        raise ValueError(f"{found}: not a specdec_bench result ({error})") from error
    if not isinstance(acceptance, dict) or "Average_AL" not in acceptance:
        raise ValueError(f"{found}: no Average_AL")
    figures = {"Average_AL": acceptance["Average_AL"], **_timing_means(timing or {})}
    per_category = {c: {"Category_AL": v} for c, v in (acceptance.get("Category_AL") or {}).items()}
    return {"tool": NAME, "figures": figures, "per_category": per_category, "meta": {"file": found.name}}


__all__ = ["FIGURES", "NAME", "SOURCE", "TOOL", "VERSION", "acceptance_figures", "conditional_rates",
           "read_result", "request_al", "size_histogram", "step_sizes", "timing_figures", "view"]
