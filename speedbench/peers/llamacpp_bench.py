"""llama.cpp's SPEED-Bench client (``tools/server/bench/speed-bench``): its figures, from our records,
its ``--output`` file, and its baseline-vs-speculative comparison.

Definitions, read in ``speed_bench.py`` and ``speed_bench_compare.py`` of
``tools/server/bench/speed-bench/`` (ggml-org/llama.cpp, 2026; the README at commit 440e352):

- A *sample* is one dataset row; its turns are sent in order to ``/v1/chat/completions``
  (non-streamed), each time with the whole conversation, the model's answers as text.
  ``latency_s`` = the sum of the turns' request durations (send to response) seen by the client.
  ``draft_n`` / ``accepted`` = the sums of the server's ``timings.draft_n`` /
  ``timings.draft_n_accepted`` over the turns. ``predicted_per_second``: the server's
  ``timings.predicted_per_second`` (``predicted_n / predicted_ms``, whose ``predicted_n`` counts the
  prefill's token too) for a one-turn sample, else ``sum completion_tokens / sum predicted_ms``.
- Per category (in the order categories first appear) and ``overall``: ``requests`` = successful
  samples, ``turns``, ``failed``, ``avg_pred_t_s`` = the mean of the samples' ``predicted_per_second``,
  ``avg_prompt_t_s`` likewise, ``avg_latency`` = the mean ``latency_s``, and ``accept_rate =
  accepted / draft_n`` pooled over the category (None when nothing was drafted). No acceptance
  length is reported.
- ``speed_bench_compare.py --baseline B --speculative S``, per category present in both:
  ``decode_speedup = S.avg_pred_t_s / B.avg_pred_t_s`` and ``latency_speedup = B.avg_latency /
  S.avg_latency``.
- Rows come from ``datasets.load_dataset("nvidia/SPEED-Bench", <bench>, split="test")`` (the Hub
  layout: a config folder of parquet files), filtered by ``--category``, at most ``--limit`` per
  category; turns are stripped; nothing checks for placeholder rows.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from speedbench.peers.common import TIMING, Figure, PeerView, Request, group_turns, load_json, own_engine

TOOL = "llama.cpp speed-bench"
VERSION = "llama.cpp tools/server/bench/speed-bench (2026, README at 440e352)"
SOURCE = "tools/server/bench/speed-bench/speed_bench.py, speed_bench_compare.py"
NAME = "llamacpp"
OVERALL = "overall"

FIGURES: tuple[Figure, ...] = (
    Figure("accept_rate", "sum draft_n_accepted / sum draft_n over the category", "mean_acceptance_rate", same=True),
    Figure("draft_n", "sum of timings.draft_n", "num_draft_tokens", same=True),
    Figure("accepted", "sum of timings.draft_n_accepted", "num_accepted_tokens", same=True),
    Figure("requests", "successful samples (rows, all turns)", None),
    Figure("turns", "request-turns of the successful samples", "num_requests", same=True),
    Figure("avg_pred_t_s", "mean over samples of the server's predicted_per_second (prefill token included)",
           "user_tps_mean", kind=TIMING,
           differs="ours is (tokens - 1) / (last chunk - first chunk) per request, measured by the client"),
    Figure("avg_latency", "mean over samples of the summed turn latencies (send to response)", "e2e_mean",
           kind=TIMING, differs="ours is per request-turn and starts at the scheduled send time"),
)


def sample_figures(turns: list[Request]) -> dict[str, Any]:
    """One sample (all turns of a row) as ``speed_bench.py`` records it."""
    completion = sum(t.output_tokens for t in turns)
    prompt_ms = sum(float(t.raw.get("prompt_ms") or 0) for t in turns)
    predicted_ms = sum(float(t.raw.get("predicted_ms") or 0) for t in turns)
    if len(turns) == 1:
        pred = turns[0].raw.get("predicted_per_second")
        prompt = turns[0].raw.get("prompt_per_second")
    else:
        pred = completion / (predicted_ms / 1000) if predicted_ms > 0 else None
        prompt_n = sum(int(t.raw.get("prompt_n") or 0) for t in turns)
        prompt = prompt_n / (prompt_ms / 1000) if prompt_ms > 0 else None
    return {"category": turns[0].category, "turns": len(turns), "latency_s": sum(t.latency_s for t in turns),
            "completion_tokens": completion, "draft_n": sum(int(t.draft_tokens or 0) for t in turns),
            "draft_n_accepted": sum(int(t.accepted or 0) for t in turns),
            "predicted_per_second": None if pred is None else float(pred),
            "prompt_per_second": None if prompt is None else float(prompt)}


def summarize(category: str, samples: list[dict[str, Any]], failed: int = 0) -> dict[str, Any]:
    """One summary row: means over samples, sums for the draft counts, accept_rate pooled."""
    def mean(key: str) -> float | None:
        values = [s[key] for s in samples if s[key] is not None]
        return statistics.mean(values) if values else None

    draft_n = sum(s["draft_n"] for s in samples)
    accepted = sum(s["draft_n_accepted"] for s in samples)
    return {"category": category, "requests": len(samples), "turns": sum(s["turns"] for s in samples),
            "failed": failed, "avg_prompt_t_s": mean("prompt_per_second"), "avg_pred_t_s": mean("predicted_per_second"),
            "avg_latency": mean("latency_s"), "draft_n": draft_n, "accepted": accepted,
            "accept_rate": accepted / draft_n if draft_n > 0 else None}


def summary_rows(samples: list[dict[str, Any]], failed_by_category: dict[str, int] | None = None) -> list[dict]:
    """Per-category rows in first-appearance order, then ``overall`` (``speed_bench.py``'s summary)."""
    failed_by_category = failed_by_category or {}
    categories = list(dict.fromkeys([s["category"] for s in samples] + list(failed_by_category)))
    rows = [summarize(c, [s for s in samples if s["category"] == c], failed_by_category.get(c, 0))
            for c in categories]
    rows.append(summarize(OVERALL, samples, sum(failed_by_category.values())))
    return rows


def compare_rows(baseline: list[dict], speculative: list[dict]) -> list[dict[str, Any]]:
    """``speed_bench_compare.py``: decode and latency speedup per category both runs hold."""
    base = {row["category"]: row for row in baseline}
    out = []
    for row in speculative:
        b = base.get(row["category"])
        if not b:
            continue
        bs, ss, bl, sl = b.get("avg_pred_t_s"), row.get("avg_pred_t_s"), b.get("avg_latency"), row.get("avg_latency")
        out.append({"category": row["category"], "base_avg_pred_t_s": bs, "spec_avg_pred_t_s": ss,
                    "decode_speedup": ss / bs if bs and ss else None, "base_avg_latency": bl, "spec_avg_latency": sl,
                    "latency_speedup": bl / sl if bl and sl else None, "accept_rate": row.get("accept_rate")})
    return out


def view(requests: list[Request], engine: str, failed: list[Request] | None = None) -> PeerView:
    """What ``speed_bench.py`` would print for these request-turns (one sample per question_id)."""
    samples = [sample_figures(turns) for turns in group_turns(requests).values()]
    failed_by_category: dict[str, int] = {}
    for qid, turns in group_turns(failed or []).items():
        failed_by_category[turns[0].category] = failed_by_category.get(turns[0].category, 0) + 1
    rows = summary_rows(samples, failed_by_category)
    notes = []
    if not own_engine(engine, NAME):
        notes.append(f"accept_rate comes from llama-server's timings.draft_n: none for engine {engine!r}")
        for row in rows:
            row.update(accept_rate=None, draft_n=0, accepted=0)
    if any(s["predicted_per_second"] is None for s in samples):
        notes.append("avg_pred_t_s needs the server's timings.predicted_per_second / predicted_ms, which these "
                     "records do not hold")
    overall = rows[-1]
    return PeerView(TOOL, VERSION, SOURCE, "per-request engine statistics (timings)",
                    {k: v for k, v in overall.items() if k != "category"},
                    per_category={row["category"]: {k: v for k, v in row.items() if k != "category"}
                                  for row in rows[:-1]}, notes=notes)


def read_result(path: str | Path) -> dict[str, Any]:
    """A ``speed_bench.py --output`` JSON file: the ``overall`` row as figures, the others per category."""
    data = load_json(path, "a llama.cpp speed-bench result")
    if not is_result(data):
        raise ValueError(f"{path}: not a llama.cpp speed-bench result (no 'summary' list of category rows)")
    rows = {row["category"]: {k: v for k, v in row.items() if k != "category"} for row in data["summary"]}
    return {"tool": NAME, "figures": rows.pop(OVERALL, {}), "per_category": rows, "meta": data.get("config") or {}}


def is_result(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("summary"), list) \
        and all(isinstance(row, dict) and "category" in row for row in data["summary"])


__all__ = ["FIGURES", "NAME", "OVERALL", "SOURCE", "TOOL", "VERSION", "compare_rows", "is_result", "read_result",
           "sample_figures", "summarize", "summary_rows", "view"]
