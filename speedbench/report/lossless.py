"""The report's losslessness table: each SD run against each baseline run on the same prompts.

Runs pair like the speedup table (same dataset config, SD against non-SD), load point by load point
(same ``run_point``). Requests pair by question and turn, and only when the prompt's token ids were
identical (``prompt_sha256``: a later turn whose history already diverged has another prompt). The
comparison itself is ``speedbench.metrics.losslessness``. A run whose outputs differ is flagged,
never dropped; re-encoded ids (an engine that sent text only) make a divergence index approximate,
and the row says which ids it compared.
"""
from __future__ import annotations

from typing import Any

from speedbench.metrics.losslessness import (NONDETERMINISM_NOTE, LosslessnessSummary, compare_outputs, pair_records,
                                             summary_fields)
from speedbench.analysis.run_folder import RunFolder


def _temperature(run: RunFolder) -> Any:
    options = run.manifest.options or {}
    return (options.get("sampling") or {}).get("temperature", options.get("temperature"))


def _row(sd: RunFolder, base: RunFolder, point: str, summary: LosslessnessSummary, sources: set[str]) -> dict:
    return {"dataset_config": sd.dataset_config, "sd_run": sd.run_id, "sd_label": sd.label,
            "baseline_run": base.run_id, "baseline_label": base.label, "point": point,
            "temperature_sd": _temperature(sd), "temperature_baseline": _temperature(base),
            **summary_fields(summary, sources),
            "requests": [{"request": r.key, "first_divergence": r.first_divergence, "sd_tokens": r.sd_tokens,
                          "baseline_tokens": r.baseline_tokens} for r in summary.requests]}


def losslessness_rows(runs: list[RunFolder]) -> tuple[list[dict], list[dict]]:
    """(table rows, flag rows): one row per (SD run, baseline run, load point both ran)."""
    rows, flags = [], []
    for sd in (r for r in runs if r.speculative):
        for base in (b for b in runs if not b.speculative and b.dataset_config == sd.dataset_config):
            base_points = base.measured_points
            for point, records in sd.measured_points.items():
                if point not in base_points:
                    continue
                sd_ids, base_ids, skipped, sources = pair_records(records, base_points[point])
                summary = compare_outputs(sd_ids, base_ids, skipped)
                row = _row(sd, base, point, summary, sources)
                rows.append(row)
                if row["num_divergent"]:
                    flags.append({"run": sd.run_id, "point": point, "flag": "outputs_differ_from_baseline",
                                  "kind": f"losslessness vs {base.run_id}", "count": row["num_divergent"],
                                  "detail": f"{row['num_identical']} of {row['num_compared']} outputs identical; "
                                            f"earliest divergence at token {row['earliest_divergence']} "
                                            f"(ids: {row['ids']}). {NONDETERMINISM_NOTE}"})
    return rows, flags
