"""Per-phase AL (thinking vs answer) for bundles that submit a phase boundary.

A bundle has no tokenizer to detect the boundary from, so the submitter names it in
``submission.json`` (``metadata.phase_boundary_ids``, optional ``phase_prompt_state``;
``speedbench submit --phase-boundary-ids``). The board then splits the SD records of the runs
its AL comes from (:func:`speedbench.analysis.selection.acceptance_records`) with the metrics
core (:func:`speedbench.metrics.phases.phase_results`: the rules, and the step spanning the
boundary counted as thinking, are documented there) and stores ``metrics["phases"]``. The
board keeps no engine per-step detail (``engine_stats.raw`` is dropped on reading), so the
per-phase figures come from chunks. Bundles without the field get no ``phases`` and no
columns; nothing is rejected for it.
"""
from __future__ import annotations

from speedbench.analysis.selection import acceptance_records
from speedbench.leaderboard.recompute import NUM_RESAMPLES, SEED, finite
from speedbench.metrics.phases import PHASES, PROMPT_NONE, PhaseMarkers, phase_results
from speedbench.metrics.results import to_jsonable
from speedbench.metrics.validation import MetricInputError
from speedbench.analysis.run_folder import RunFolder

_PHASE_KEYS = ("num_requests", "num_tokens", "acceptance_length", "source", "tokens_per_s")


def bundle_phases(runs: list[RunFolder], metadata) -> dict | None:
    """The ``metrics["phases"]`` document, or None when the bundle names no boundary."""
    if not getattr(metadata, "phase_boundary_ids", ()):
        return None
    markers = PhaseMarkers(boundary_ids=tuple(metadata.phase_boundary_ids), source="submission",
                           prompt_state=metadata.phase_prompt_state or PROMPT_NONE)
    records = acceptance_records(runs)
    try:
        results = phase_results(records, markers, metadata.draft_length, num_resamples=NUM_RESAMPLES,
                                seed=SEED).to_dict()
    except MetricInputError as exc:  # a split the core refuses is reported, never a rejection
        return {"markers": markers.to_dict(), "error": str(exc)}
    phases = {}
    for name in PHASES:
        figures = results["phases"].get(name) or {}
        summary = figures.get("chunks") or {}
        phases[name] = {**{k: figures.get(k) for k in _PHASE_KEYS},
                        "acceptance_length_ci": summary.get("acceptance_length_ci"),
                        "conditional_acceptance_rate": summary.get("conditional_acceptance_rate")}
    return to_jsonable({
        "markers": results["markers"], "num_records": results["num_records"], "num_split": results["num_split"],
        "num_unaligned": results["num_unaligned"], "num_without_ids": results["num_without_ids"],
        "rules": results["rules"], "thinking_token_share": results["thinking_token_share"], "phases": phases})


def phase_cells(summary) -> dict:
    """The board row's ``al_thinking`` / ``al_answer`` (with CI) keys; empty when not submitted."""
    if not isinstance(summary, dict) or not isinstance(summary.get("phases"), dict):
        return {}
    cells = {}
    for name in PHASES:
        figures = summary["phases"].get(name)
        if not isinstance(figures, dict):
            continue
        ci = figures.get("acceptance_length_ci")
        ci = ci if isinstance(ci, list) and len(ci) == 2 else [None, None]
        cells[f"al_{name}"] = _number(figures.get("acceptance_length"))
        cells[f"al_{name}_ci_low"], cells[f"al_{name}_ci_high"] = _number(ci[0]), _number(ci[1])
    return cells


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = finite(value)
    return None if value is None else round(value, 3)


__all__ = ["bundle_phases", "phase_cells"]
