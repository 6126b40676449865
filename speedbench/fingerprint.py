"""Fingerprints: the content fingerprint of one dataset config (what a run and the leaderboard
identify a build by), and the sha256 of a file (model files, records, parquet files).

It lives in the core because both the measurement client (which records it in a run's
``manifest.json``) and the leaderboard (which checks it against known builds) need it, and the
core never imports the client.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read a MiB at a time (model files run to gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# The reference framework's prepared layout: <dir>/speed/<config>/test.parquet.
REFERENCE_LAYOUT_DIR = "speed"


def config_parquet_files(dataset_dir: str | Path, config: str) -> list[Path]:
    """The parquet files of ``config`` in a dataset folder, sorted: ``data/<config>/*.parquet`` (what
    ``speedbench build`` and the Hub write), else ``speed/<config>/*.parquet`` (the reference
    framework's prepared layout, ``test.parquet``). The same rows give the same fingerprint in both."""
    for layout in ("data", REFERENCE_LAYOUT_DIR):
        files = sorted((Path(dataset_dir) / layout / config).glob("*.parquet"))
        if files:
            return files
    available = sorted({f"{p.parent.name}/{p.name}" for layout in ("data", REFERENCE_LAYOUT_DIR)
                        for p in (Path(dataset_dir) / layout).glob("*") if p.is_dir()})
    raise FileNotFoundError(f"{Path(dataset_dir) / 'data' / config} (or {REFERENCE_LAYOUT_DIR}/{config}/test.parquet): "
                            f"no parquet files for config {config!r} (configs present: {', '.join(available) or 'none'})")


def dataset_fingerprint(dataset_dir: str | Path, config: str) -> str:
    """Content fingerprint of one config: sha256 over the sorted sha256s of its rows.

    Each row is hashed as canonical JSON of all its fields, so the fingerprint names the prompts
    themselves: it does not change when other configs are added to the folder, when the parquet
    writer changes, or with the row order.
    """
    import pyarrow.parquet as pq

    row_hashes = []
    for path in config_parquet_files(dataset_dir, config):
        for row in pq.ParquetFile(path).read().to_pylist():
            canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            row_hashes.append(hashlib.sha256(canonical.encode("utf-8")).hexdigest())
    return hashlib.sha256("\n".join(sorted(row_hashes)).encode("ascii")).hexdigest()
