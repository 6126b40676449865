"""Plausibility warnings: things that do not prove a result wrong but that a reader should see.

They never reject; they are stored with the entry and shown on the board (column "Warnings")
next to its trust status. Each is ``{"code", "message"}``:

- ``greedy.outputs_differ``: at temperature 0, speculative decoding is lossless, so the SD run
  and its baseline should give the same text for the same prompt; flagged when more than
  ``GREEDY_DIFFER_SHARE`` of the paired request-turns differ (numerics can flip a few);
- ``al.above_family``: the AL is above what the method's drafters usually reach at this K
  (``1 + sum_i p^i`` with the per-method ceiling ``p`` of ``TYPICAL_MAX_RATE``);
- ``speedup.above_al``: a measured speedup above the AL of the same load point by more than
  10% (a verification step is never cheaper than an autoregressive one);
- ``metrics.<...>``: the metrics core's own warnings on the acceptance data (merged chunks ...);
- ``acceptance_pinned`` / ``degenerate_output``: the degenerate-speculation guard
  (:mod:`speedbench.metrics.degenerate`, docs/metrics.md) at one SD load point;
- ``duplicate.tokens``: another entry measured exactly the same token streams.
"""
from __future__ import annotations

from speedbench.metrics.degenerate import degenerate_guard
from speedbench.analysis.run_folder import RunFolder

GREEDY_DIFFER_SHARE = 0.05
# Per-position acceptance rate a method's drafters rarely exceed (published EAGLE3 / MTP results
# stay below it; n-gram lookup matches far less often).
TYPICAL_MAX_RATE = {"ngram": 0.8, "draft_model": 0.9, "eagle": 0.9, "eagle3": 0.92, "medusa": 0.85, "mtp": 0.95}
DEFAULT_MAX_RATE = 0.95


def typical_al_ceiling(sd_method: str, draft_length: int) -> float:
    p = TYPICAL_MAX_RATE.get(sd_method.lower(), DEFAULT_MAX_RATE)
    return 1 + sum(p ** i for i in range(1, draft_length + 1))


def _warning(code: str, message: str) -> dict:
    return {"code": code, "message": message}


def greedy_warnings(runs: list[RunFolder], temperature: float) -> list[dict]:
    if temperature != 0:
        return []
    out = []
    for sd in (r for r in runs if r.role == "sd"):
        for base in (r for r in runs if r.role == "baseline" and r.dataset_config == sd.dataset_config):
            texts = {(r.question_id, r.turn_index): r.output_text for r in base.records}
            pairs = [(r.output_text, texts[(r.question_id, r.turn_index)]) for r in sd.records
                     if (r.question_id, r.turn_index) in texts]
            differ = sum(1 for a, b in pairs if a != b)
            if pairs and differ > GREEDY_DIFFER_SHARE * len(pairs):
                out.append(_warning("greedy.outputs_differ",
                                    f"{sd.path} vs {base.path}: {differ} of {len(pairs)} greedy outputs differ "
                                    "(speculative decoding at temperature 0 should reproduce the baseline)"))
    return out


def degenerate_warnings(runs: list[RunFolder]) -> list[dict]:
    """The degenerate-speculation guard (:mod:`speedbench.metrics.degenerate`) per SD run and load
    point: pinned acceptance and looping outputs above the documented share (warnings, not refusals)."""
    out = []
    for run in (r for r in runs if r.role == "sd"):
        synthetic = (run.engine_info or {}).get("speculation") == "synthetic"
        run_k = (run.engine_info or {}).get("draft_length")  # a stranger's engine.json: only a whole number counts
        run_k = run_k if type(run_k) is int and run_k > 0 else None
        for point, ok in run.points.items():  # successful measured records, as results.json's guard
            for flag in degenerate_guard(ok, synthetic, run_k).flags:
                code, _, message = flag.partition(": ")
                out.append(_warning(code, f"{run.path} {point}: {message}"))
    return out


def metric_warnings(metadata, metrics: dict) -> list[dict]:
    out = []
    acceptance = metrics.get("acceptance", {})
    al = acceptance.get("acceptance_length")
    ceiling = typical_al_ceiling(metadata.sd_method, metadata.draft_length)
    if al is not None and al > ceiling:
        out.append(_warning("al.above_family", f"AL {al:.3f} is above what {metadata.sd_method} drafters usually "
                                               f"reach at K = {metadata.draft_length} ({ceiling:.2f})"))
    point_al = {(p["dataset_config"], p["point"]): p.get("acceptance_length")
                for p in metrics.get("points", []) if p.get("role") == "sd"}
    for s in metrics.get("speedup", []):
        sd_al = point_al.get((s["dataset_config"], s["point"]))
        if s.get("speedup_measured") and sd_al and s["speedup_measured"] > 1.1 * sd_al:
            out.append(_warning("speedup.above_al", f"measured speedup {s['speedup_measured']:.2f} at "
                                                    f"{s['isl']} c={s['concurrency']} exceeds the AL {sd_al:.2f}"))
    for text in acceptance.get("warnings", [])[:5]:
        out.append(_warning("metrics.acceptance", str(text)[:300]))
    return out
