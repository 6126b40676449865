"""The YAML ``configs:`` block of a dataset folder's card (README.md), written by ``speedbench
build`` and by ``speedbench export --layout llamacpp``.

``datasets`` (5.2) caches a local folder under its folder name, the config name and a hash of
the card's metadata; neither the parquet files' content nor the folder's location is in that key.
So two folders named ``speed-bench`` with the same card (a rebuild with another seed or other
sources, or a second build elsewhere) load the rows cached for whichever was loaded first, without
a word. Each config's entry therefore carries the sha256 of its parquet files as its
``description``, a builder parameter that ``datasets`` puts in the hash: different rows, different
cache entry.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from speedbench.fingerprint import config_parquet_files, file_sha256


def config_data_sha256(dataset_dir: str | Path, config: str) -> str:
    """sha256 over the config's parquet files: each file's name and the sha256 of its bytes."""
    digest = hashlib.sha256()
    for path in config_parquet_files(dataset_dir, config):
        digest.update(f"{path.name} {file_sha256(path)}\n".encode("utf-8"))
    return digest.hexdigest()


def configs_yaml(dataset_dir: str | Path, configs: list[str], default: str | None = None) -> str:
    """The ``configs:`` block: one entry per config, reading ``data/<config>/test-*.parquet`` as
    split ``test``, described by its data's sha256; ``default`` (if given) is the default config."""
    lines = ["configs:"]
    for name in configs:
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test",
                  f"    path: data/{name}/test-*.parquet",
                  f'  description: "data sha256 {config_data_sha256(dataset_dir, name)}"']
        if name == default:
            lines.append("  default: true")
    return "\n".join(lines)
