"""The report's thinking-vs-answer tables: ``speedbench.metrics.phases`` on every run's load points.

Per run the markers come from the tokenizer folder its manifest names (or ``--phase-tokenizer``),
detected by ``speedbench.tokenization.phase_boundary``, with ``--phase-boundary-ids`` /
``--phase-prompt-state`` applied. A run whose tokenizer has no phase boundary gets no rows, only
its reason (in ``detection`` and a summary line). Rows:

- ``rows``: one per (run, point, phase): tokens, AL (primary source: the engine's per-step detail
  when every record has it, else chunks) with its CI, latency per phase;
- ``position_rates``: one per (run, point, phase, position): ``AR_i`` and ``P(>= i)``.
"""
from __future__ import annotations

from typing import Any

from speedbench.metrics.phases import ANSWER, PHASES, phase_results
from speedbench.analysis.run_folder import RunFolder
from speedbench.settings import NUM_RESAMPLES
from speedbench.tokenization.phase_boundary import resolve_markers


def _primary(phase: dict) -> dict | None:
    return phase.get("engine") if phase.get("source") == "engine" else phase.get("chunks")


def _phase_row(run: RunFolder, point: str, results: dict, name: str) -> dict[str, Any]:
    phase = results["phases"][name]
    summary = _primary(phase) or {}
    ci = summary.get("acceptance_length_ci") or [None, None]
    gaps, duration = phase["inter_chunk_latency_s"], phase["duration_s"]
    total = sum(results["phases"][p]["num_tokens"] for p in PHASES)
    return {
        "run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "point": point, "phase": name,
        "num_requests": phase["num_requests"], "num_tokens": phase["num_tokens"],
        "token_share": phase["num_tokens"] / total if total else None, "num_step_tokens": phase["num_step_tokens"],
        "num_steps": summary.get("num_steps"), "acceptance_length": phase["acceptance_length"],
        "acceptance_length_ci_low": ci[0], "acceptance_length_ci_high": ci[1],
        "mean_acceptance_rate": summary.get("mean_acceptance_rate"), "source": phase["source"],
        "duration_mean_s": duration["mean"], "tokens_per_s": phase["tokens_per_s"],
        "inter_chunk_p50_s": gaps["p50"], "inter_chunk_p99_s": gaps["p99"],
        "time_to_answer_p50_s": results["time_to_answer_s"]["p50"] if name == ANSWER else None,
        "num_split": results["num_split"], "num_records": results["num_records"],
        "rules": results["rules"], "num_spanning_steps": results["num_spanning_steps"],
    }


def _position_rows(run: RunFolder, point: str, results: dict, name: str) -> list[dict[str, Any]]:
    phase = results["phases"][name]
    summary = _primary(phase) or {}
    rates = summary.get("conditional_acceptance_rate") or []
    cis = summary.get("conditional_acceptance_rate_ci") or [None] * len(rates)
    marginals = summary.get("marginal_acceptance_rate") or [None] * len(rates)
    return [{"run": run.run_id, "label": run.label, "dataset_config": run.dataset_config, "point": point,
             "phase": name, "source": phase["source"], "position": i, "conditional_acceptance_rate": rate,
             "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None, "marginal_acceptance_rate": m}
            for i, (rate, ci, m) in enumerate(zip(rates, cis, marginals), start=1)]


def phase_tables(runs: list[RunFolder], *, boundary_ids: str | None = None, prompt_state: str | None = None,
                 tokenizer: str | None = None, num_resamples: int = NUM_RESAMPLES) -> dict[str, Any]:
    """``{"rows", "position_rates", "detection": {run: ...}, "results": {"run/point": ...}}``."""
    out: dict[str, Any] = {"rows": [], "position_rates": [], "detection": {}, "results": {}}
    for run in runs:
        folder = tokenizer or run.manifest.tokenizer_path
        detection = resolve_markers(folder, boundary_ids, prompt_state)
        out["detection"][run.run_id] = detection.to_dict()
        if detection.markers is None:
            continue
        for point, records in run.measured_points.items():
            results = phase_results(records, detection.markers, run.draft_length if run.speculative else 0,
                                    num_resamples=num_resamples).to_dict()
            out["results"][f"{run.run_id}/{point}"] = results
            if not results["num_split"]:
                continue  # no record with ids aligned to its chunks: nothing to split
            for name in PHASES:
                out["rows"].append(_phase_row(run, point, results, name))
                out["position_rates"] += _position_rows(run, point, results, name)
    return out


def phase_summary_lines(phases: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """One line per run: the per-phase AL at its first point, or why there are no phases (runs
    without a boundary for the same reason share one line)."""
    lines, without = [], {}
    for run_id, detection in (phases.get("detection") or {}).items():
        rows = [r for r in phases.get("rows") or [] if r["run"] == run_id]
        if detection["markers"] is None:
            without.setdefault(detection["reason"], []).append(labels.get(run_id, run_id))
        elif not rows:
            lines.append(f"phases {labels.get(run_id, run_id)}: no record has engine token ids aligned with its "
                         "chunks (re-encoded or missing ids), so no split")
        else:
            point = rows[0]["point"]
            parts = [f"{r['phase']} {r['num_tokens']} tokens, AL {r['acceptance_length']:.3f}"
                     if r["acceptance_length"] is not None else f"{r['phase']} {r['num_tokens']} tokens"
                     for r in rows if r["point"] == point]
            note = f" (note: {detection['note']})" if detection.get("note") else ""
            lines.append(f"phases {labels.get(run_id, run_id)} {point}: " + "; ".join(parts) + note)
    return [f"phases {', '.join(runs)}: {reason}" for reason, runs in without.items()] + lines


__all__ = ["phase_summary_lines", "phase_tables"]
