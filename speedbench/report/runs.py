"""Reading run folders written by ``speedbench run`` (records.jsonl, manifest.json, results.json).

A run folder may also hold ``engine.json``: what ``LocalEngine.describe()`` said about the
server (speculation mode, draft length, model files with sha256). ``speedbench demo`` writes
it; for other engines the speculation settings are inferred from the records (a run whose
requests report drafted tokens is speculative).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedbench.records import MANIFEST_NAME, RECORDS_NAME, RESULTS_NAME, RunManifest, TurnRecord, read_records

ENGINE_NAME = "engine.json"


class RunFolderError(ValueError):
    """A run folder is missing a file or holds one that cannot be read."""


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RunFolderError(f"{path}: not valid JSON ({error})") from error


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def isl_bucket(dataset_config: str) -> str:
    """``throughput_8k`` -> ``8k``; configs without a length bucket keep their name."""
    match = re.search(r"(\d+k)$", dataset_config or "")
    return match.group(1) if match else (dataset_config or "?")


def point_sort_key(point: str, requested_concurrency: int | None, request_rate: float | None) -> tuple:
    return (requested_concurrency is None, requested_concurrency or 0, request_rate or 0.0, point)


@dataclass
class LoadedRun:
    """One run folder: its manifest, records, and what kind of engine configuration it measured."""

    path: Path
    run_id: str
    manifest: dict[str, Any]
    records: list[TurnRecord]
    results: dict[str, Any] | None
    engine_info: dict[str, Any] | None
    speculative: bool
    draft_length: int | None
    speculation: str
    label: str
    records_sha256: str
    notes: list[str] = field(default_factory=list)

    @property
    def dataset_config(self) -> str:
        return str(self.manifest.get("dataset_config") or "?")

    @property
    def isl_bucket(self) -> str:
        return isl_bucket(self.dataset_config)

    def measured_records(self) -> list[TurnRecord]:
        return [record for record in self.records if not record.warmup]

    def points(self) -> list[tuple[str, list[TurnRecord]]]:
        """Load points in sweep order (closed loop by concurrency, then open loop by rate)."""
        groups: dict[str, list[TurnRecord]] = {}
        for record in self.measured_records():
            groups.setdefault(record.run_point, []).append(record)
        def key(item):
            first = item[1][0]
            return point_sort_key(item[0], first.requested_concurrency, first.request_rate)
        return sorted(groups.items(), key=key)


def _infer_speculation(records: list[TurnRecord], engine_info: dict | None, manifest: dict) -> tuple[bool, int | None, str, list[str]]:
    notes: list[str] = []
    if engine_info and engine_info.get("speculation"):
        speculation = str(engine_info["speculation"])
        k = int(engine_info.get("draft_length") or 0) or None
        return speculation != "none", (k if speculation != "none" else None), speculation, notes
    drafted = [r.engine_stats for r in records if r.engine_stats and (r.engine_stats.draft_tokens or 0) > 0]
    if not drafted:
        return False, None, "none", ["no request reported drafted tokens: treated as the autoregressive baseline"]
    lengths = {s.draft_length for s in drafted if s.draft_length}
    option_k = manifest.get("options", {}).get("draft_length")
    if option_k:
        k = int(option_k)
    elif len(lengths) == 1:
        k = int(lengths.pop())
    else:
        k = None
        notes.append("draft length not reported by the engine; inferred from step sizes where possible")
    return True, k, "speculative", notes


def load_run(path: str | Path) -> LoadedRun:
    path = Path(path)
    if not path.is_dir():
        raise RunFolderError(f"{path}: not a run folder (expected {RECORDS_NAME} and {MANIFEST_NAME} in it)")
    manifest = _read_json(path / MANIFEST_NAME)
    if manifest is None:
        raise RunFolderError(f"{path / MANIFEST_NAME}: missing (written by 'speedbench run' when a run starts)")
    RunManifest.from_dict(manifest)  # raises on a manifest missing required fields
    records_path = path / RECORDS_NAME
    if not records_path.exists():
        raise RunFolderError(f"{records_path}: missing")
    try:
        records = list(read_records(records_path))
    except (TypeError, KeyError) as error:
        raise RunFolderError(f"{records_path}: a record lacks a required field ({error})") from error
    if not [r for r in records if not r.warmup]:
        raise RunFolderError(f"{records_path}: no measured (non-warmup) records")
    engine_info = _read_json(path / ENGINE_NAME)
    speculative, k, speculation, notes = _infer_speculation(records, engine_info, manifest)
    if engine_info and engine_info.get("label"):
        label = str(engine_info["label"])
    elif speculative:
        label = f"SD {speculation}" + (f" K={k}" if k else "")
    else:
        label = "baseline (no SD)"
    return LoadedRun(
        path=path,
        run_id=path.name,
        manifest=manifest,
        records=records,
        results=_read_json(path / RESULTS_NAME),
        engine_info=engine_info,
        speculative=speculative,
        draft_length=k,
        speculation=speculation,
        label=label,
        records_sha256=_sha256(records_path),
        notes=notes,
    )


def load_runs(paths: list[str | Path]) -> list[LoadedRun]:
    """Load run folders; run ids and labels are made unique (folder name appended on a clash)."""
    runs = [load_run(p) for p in paths]
    seen_ids: dict[str, int] = {}
    for run in runs:
        count = seen_ids.get(run.run_id, 0)
        seen_ids[run.run_id] = count + 1
        if count:
            run.run_id = f"{run.run_id}#{count + 1}"
    labels: dict[str, int] = {}
    for run in runs:
        key = f"{run.label}|{run.dataset_config}"
        labels[key] = labels.get(key, 0) + 1
    for run in runs:
        if labels[f"{run.label}|{run.dataset_config}"] > 1:
            run.label = f"{run.label} [{run.run_id}]"
    return runs
