"""A run folder -> its speculation profile (:mod:`speedbench.metrics.profile`), overall and per category.

The records are read as every figure is (:mod:`speedbench.metrics.acceptance.from_records`): every
successful measured request of every load point. The per-position rates come from the primary
source's histogram over drafted steps (vLLM's and SGLang's engine statistics); where the engine
gives only counts (llama.cpp), from the chunk source when chunks are steps (its trimmed histogram:
the prefill's lone token and each request's last, possibly cut, step left out). ``measurement_conditions.
acceptance_source`` names which.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from speedbench.metrics.acceptance.draft_length import declared_draft_length, reported_draft_length
from speedbench.metrics.profile import METHODS, StepGroup, build_profile, capped_draft_tokens, k_variation
from speedbench.metrics.acceptance.from_records import record_acceptance
from speedbench.metrics.acceptance.steps import record_steps
from speedbench.records import MAX_TOKENS_REASONS
from speedbench.analysis.run_folder import RunFolder, read_run_folder


class ProfileError(ValueError):
    """The run folder cannot give a profile (no speculation, no such category, no records)."""


def _checkpoint(path: Any, sha256: Any = None) -> dict | None:
    """``org/model`` of a path (the last two parts: a profile is published, local paths are not)."""
    parts = [p for p in str(path or "").replace("\\", "/").split("/") if p]
    return {"id": "/".join(parts[-2:]), "sha256": sha256} if parts else None


def _expected_drafts(record, counts, k: int) -> int | None:
    """Drafted tokens a fixed K gives this request (:mod:`speedbench.metrics.profile`)."""
    steps = counts.drafted_steps if counts.drafted_steps is not None else counts.decode_steps
    if counts.drafted_tokens == steps * k:
        return steps * k
    if record.chunks_are_steps and record.finish_reason in MAX_TOKENS_REASONS:
        return capped_draft_tokens([t for t in record.chunk_tokens if t > 0], k, record.output_tokens)
    return steps * k


def _k_varied(records, k: int) -> str | None:
    counts = [(r, record_steps(r)) for r in records]
    return k_variation([None if c is None else c.drafted_tokens for _, c in counts],
                       [None if c is None else _expected_drafts(r, c, k) for r, c in counts])


def _source(acc) -> tuple[str, Any]:
    primary = acc.primary
    if primary is not None and primary.acceptance_histogram:
        return acc.primary_name, primary
    if acc.chunks is not None and acc.chunks_are_steps and acc.chunks.acceptance_histogram:
        return "chunks", acc.chunks
    if primary is None:
        raise ProfileError("no acceptance source: the records carry no engine statistics and their chunks "
                           "are not decoding steps")
    return acc.primary_name, primary


def _group(summary: dict, records, k: int) -> StepGroup:
    return StepGroup(histogram=summary.get("acceptance_histogram"), acceptance_length=summary["acceptance_length"],
                     acceptance_length_per_request=summary.get("acceptance_length_request_weighted"),
                     k_varied=_k_varied(records, k))


def run_profile(run: str | Path | RunFolder, category: str | None = None) -> dict[str, Any]:
    """The profile of a run folder (``category``: only that category's requests)."""
    folder = run if isinstance(run, RunFolder) else read_run_folder(run)
    records = list(folder.records)
    if category is not None:
        known = sorted({r.category for r in records})
        records = [r for r in records if r.category == category]
        if not records:
            raise ProfileError(f"{folder.path}: no successful measured request in category {category!r} "
                               f"(categories: {', '.join(known) or 'none'})")
    if not records:
        raise ProfileError(f"{folder.path}: no successful measured request")
    manifest = folder.manifest
    k = declared_draft_length(options=manifest.options, engine_info=folder.engine_info,
                              server_info=(manifest.server or {}).get("server_info")) or reported_draft_length(records)
    if not k:
        raise ProfileError(f"{folder.path}: the run did not speculate (K = {k}): a profile needs K >= 1")
    acc = record_acceptance(records, k, num_resamples=0, untrimmed=False)
    source_name, summary = _source(acc)
    summary = summary.to_dict()
    by_category = {name: [r for r in records if r.category == name] for name in summary.get("per_category", {})}
    categories = {name: _group(figures, by_category[name], k) for name, figures in summary["per_category"].items()}
    info = folder.engine_info or {}
    models = info.get("models") or {}
    draft = models.get("draft") or {}
    return build_profile(
        _group(summary, records, k), categories, k, method=METHODS.get(str(info.get("speculation")), info.get("speculation")),
        draft_checkpoint=_checkpoint(draft.get("path"), draft.get("sha256")) if draft else None,
        target_model=_checkpoint(manifest.model_id),
        measurement_conditions={"engine": manifest.engine, "engine_version": manifest.engine_version,
                                "dataset_config": manifest.dataset_config, "load_points": folder.point_names,
                                "num_requests": len(records), "category": category,
                                "acceptance_source": source_name, "run": str(folder.path)})


__all__ = ["ProfileError", "run_profile"]
