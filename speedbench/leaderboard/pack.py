"""Packing RUN_DIRs written by ``speedbench run`` into a submission bundle (a deterministic tar.gz).

Only the run files the leaderboard reads are packed (``records.jsonl``, ``manifest.json``,
``results.json``); the same runs and metadata always give the same bytes, so a resubmission
is recognised as a duplicate.
"""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

from speedbench.leaderboard.schema import (
    BUNDLE_SCHEMA_VERSION,
    REQUIRED_RUN_FILES,
    RUN_FILES,
    SUBMISSION_FILE,
    SubmissionMetadata,
)


def _run_name(path: Path, used: set[str], role: str) -> str:
    base = "".join(c if c.isalnum() or c in "_.-" else "_" for c in path.resolve().name) or "run"
    name = f"{role}-{base}" if role == "baseline" else base
    candidate, i = name, 2
    while candidate in used:
        candidate, i = f"{name}-{i}", i + 1
    used.add(candidate)
    return candidate


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def submission_document(metadata: SubmissionMetadata | dict, runs: list[dict]) -> dict:
    meta = metadata.to_dict() if isinstance(metadata, SubmissionMetadata) else dict(metadata)
    return {"schema_version": BUNDLE_SCHEMA_VERSION, "metadata": meta, "runs": runs}


def pack_bundle(run_dirs: list[Path], metadata: SubmissionMetadata | dict,
                baseline_dirs: list[Path] = ()) -> bytes:
    """The bundle bytes for these SD runs (and optional autoregressive baselines)."""
    used: set[str] = set()
    members: list[tuple[str, bytes]] = []
    runs: list[dict] = []
    for role, dirs in (("sd", run_dirs), ("baseline", baseline_dirs)):
        for run_dir in dirs:
            run_dir = Path(run_dir)
            missing = [f for f in REQUIRED_RUN_FILES if not (run_dir / f).is_file()]
            if missing:
                raise FileNotFoundError(f"{run_dir}: not a finished run folder (missing {', '.join(missing)})")
            name = f"runs/{_run_name(run_dir, used, role)}"
            runs.append({"path": name, "role": role})
            for file_name in RUN_FILES:
                if (run_dir / file_name).is_file():
                    members.append((f"{name}/{file_name}", (run_dir / file_name).read_bytes()))
    document = submission_document(metadata, runs)
    members.insert(0, (SUBMISSION_FILE, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8")))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            _add(tar, name, data)
    return gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
