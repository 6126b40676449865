"""Our dataset in each peer's input layout, so that every peer runs the same rows offline, unchanged.

``export(dataset_dir, layout, out_dir)`` reads a built and resolved dataset folder
(``data/<config>/*.parquet``, or the reference's ``speed/<config>/test.parquet``) and writes:

- ``vllm``: ``OUT/<config>.jsonl``, one row per line with ``question_id``, ``category`` and
  ``messages`` (one ``{"role": "user", "content": turn}`` per turn) beside the published fields:
  ``vllm bench serve --dataset-name speed_bench --dataset-path OUT --speed-bench-dataset-subset
  <config>`` reads it with ``pandas.read_json(lines=True)`` (and aiperf's SPEED-Bench loader reads the
  same rows);
- ``sglang``: ``OUT/<config>.jsonl`` with the published fields (``turns`` a list of strings), for
  ``bench_serving --dataset-name speed-bench --dataset-path OUT/<config>.jsonl``;
- ``specdec``: ``OUT/speed/<config>/test.parquet``, what specdec_bench's ``prepare_data.py`` writes
  and ``--dataset_path`` loads with ``datasets.load_dataset("parquet", ...)``;
- ``llamacpp``: ``OUT/nvidia/SPEED-Bench/`` in the Hub layout (``data/<config>/test-*.parquet`` and a
  card whose ``configs:`` name them): run llama.cpp's ``speed_bench.py`` from ``OUT`` and
  ``datasets.load_dataset("nvidia/SPEED-Bench", <config>)`` finds the local folder of that name
  before the Hub.

``name`` writes one config under another name: ``vllm bench serve`` selects only the published
names (``PUBLISHED_CONFIGS``), so SPEED-Lite's ``lite_qualitative`` goes out as ``qualitative``;
the manifest notes a vLLM file no published name selects.

Rows whose turns still hold the reference's placeholder sentence are refused (llama.cpp's client
would otherwise measure the sentence itself). ``OUT/export.json`` records what was written: the
source folder, each config's content fingerprint and row count, every file's sha256.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speedbench import __version__
from speedbench.dataset_card import configs_yaml
from speedbench.fingerprint import REFERENCE_LAYOUT_DIR, config_parquet_files, dataset_fingerprint, file_sha256
from speedbench.schema import ARROW_SCHEMA, THROUGHPUT_BUCKETS, isl_bucket, placeholder_turns

LAYOUTS = ("vllm", "sglang", "specdec", "llamacpp")
# The published config names: vllm bench serve's --speed-bench-dataset-subset accepts only these.
PUBLISHED_CONFIGS = ("qualitative", *(f"throughput_{bucket}" for bucket in THROUGHPUT_BUCKETS))
REQUIRED_FIELDS = ("question_id", "category", "turns")
HUB_FOLDER = Path("nvidia") / "SPEED-Bench"
EXPORT_MANIFEST = "export.json"

# What each peer does with a row (README / docs/peers.md say it too).
PEER_SENDS = {
    "vllm": "vllm bench serve sends the first turn only, as text (chat template applied unless "
            "--skip-chat-template); aiperf's loader sends every turn, as text",
    "sglang": "bench_serving sends turns[0] only, as text with the chat template applied",
    "specdec": "specdec_bench runs every turn in-process, its own answers put back, the chat template applied "
               "and tokenized by itself",
    "llamacpp": "llama.cpp's speed_bench.py sends every turn to /v1/chat/completions as text (the server applies "
                "the template), its answers put back as text",
}


class ExportError(ValueError):
    """A dataset that cannot be exported, naming the file, row or field."""


def dataset_configs(dataset_dir: str | Path) -> list[str]:
    """Configs with parquet files in the folder (``data/`` first, then the reference layout)."""
    names: list[str] = []
    for layout in ("data", REFERENCE_LAYOUT_DIR):
        root = Path(dataset_dir) / layout
        if root.is_dir():
            names += [p.name for p in sorted(root.iterdir()) if p.is_dir() and any(p.glob("*.parquet"))]
    return list(dict.fromkeys(names))


def read_config(dataset_dir: str | Path, config: str) -> list[dict[str, Any]]:
    """A config's rows, checked: the fields every peer needs, and no placeholder left (all counted)."""
    import pyarrow.parquet as pq

    try:
        files = config_parquet_files(dataset_dir, config)
    except FileNotFoundError as error:
        raise ExportError(str(error)) from None
    rows: list[dict[str, Any]] = []
    for path in files:
        table = pq.read_table(path)
        missing = [name for name in REQUIRED_FIELDS if name not in table.column_names]
        if missing:
            raise ExportError(f"{path}: missing field(s) {', '.join(missing)}")
        for index, row in enumerate(table.to_pylist()):
            turns = row.get("turns")
            if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
                raise ExportError(f"{path} row {index} (question_id {row.get('question_id')!r}): 'turns' must be "
                                  "a non-empty list of non-empty strings")
            rows.append(row)
    marked = [(i, placeholder_turns(row["turns"])) for i, row in enumerate(rows) if placeholder_turns(row["turns"])]
    if marked:
        index, turns = marked[0]
        raise ExportError(
            f"{Path(dataset_dir)} config {config}: {len(marked)} of {len(rows)} rows are unresolved placeholders "
            f"(first: question_id {rows[index]['question_id']!r}, turn {turns[0] + 1}); a peer would measure the "
            f"placeholder sentence. Resolve them first: speedbench resolve {dataset_dir} --out "
            f"{Path(dataset_dir).name}-resolved")
    return rows


def vllm_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row with ``messages`` (every turn as a user message) beside the published fields."""
    return {**row, "messages": [{"role": "user", "content": turn} for turn in row["turns"]]}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return path


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The published schema for the fields it names, in its order; any other field after them.
    names = [f.name for f in ARROW_SCHEMA if any(f.name in row for row in rows)]
    names += sorted({k for row in rows for k in row} - set(names))
    fields = [ARROW_SCHEMA.field(n) if n in ARROW_SCHEMA.names else pa.field(n, pa.infer_type([r.get(n) for r in rows]))
              for n in names]
    table = pa.Table.from_pylist([{n: row.get(n) for n in names} for row in rows], schema=pa.schema(fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _hub_card(hub: Path, configs: list[str]) -> str:
    return "\n".join(["---", configs_yaml(hub, configs), "---", "",
                      "SPEED-Bench rows exported by speedbench export --layout llamacpp "
                      "(resolved: no placeholder rows).", ""])


def write_layout(layout: str, rows_by_config: dict[str, list[dict[str, Any]]], out_dir: Path) -> list[Path]:
    """Write the rows in ``layout``; returns the files written."""
    if layout == "vllm":
        return [_write_jsonl(out_dir / f"{c}.jsonl", [vllm_row(r) for r in rows]) for c, rows in rows_by_config.items()]
    if layout == "sglang":
        return [_write_jsonl(out_dir / f"{c}.jsonl", rows) for c, rows in rows_by_config.items()]
    if layout == "specdec":
        return [_write_parquet(out_dir / REFERENCE_LAYOUT_DIR / c / "test.parquet", rows)
                for c, rows in rows_by_config.items()]
    if layout == "llamacpp":
        hub = out_dir / HUB_FOLDER
        files = [_write_parquet(hub / "data" / c / "test-00000-of-00001.parquet", rows)
                 for c, rows in rows_by_config.items()]
        card = hub / "README.md"
        card.write_text(_hub_card(hub, list(rows_by_config)), encoding="utf-8")
        return files + [card]
    raise ExportError(f"--layout {layout!r}: expected one of {', '.join(LAYOUTS)}")


def _published_name(config: str) -> str:
    """The published config a subset of ``config`` stands for: its length bucket's, else qualitative."""
    bucket = isl_bucket(config)
    return f"throughput_{bucket}" if bucket in THROUGHPUT_BUCKETS else "qualitative"


def _selectable(layout: str, names) -> list[str]:
    """Notes on files the peer cannot be pointed at by their name."""
    hidden = [n for n in names if n not in PUBLISHED_CONFIGS]
    if layout != "vllm" or not hidden:
        return []
    return [f"vllm bench serve's --speed-bench-dataset-subset takes only {', '.join(PUBLISHED_CONFIGS)}: it cannot "
            f"select {', '.join(f'{n}.jsonl' for n in hidden)}; export one config under a published name "
            f"(--config {hidden[0]} --as {_published_name(hidden[0])})"]


def export(dataset_dir: str | Path, layout: str, out_dir: str | Path, configs: list[str] | None = None,
           name: str | None = None) -> dict:
    """Export ``configs`` (default: all) of a dataset folder in a peer's layout, one of them under
    ``name`` when given; returns the manifest."""
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    if layout not in LAYOUTS:
        raise ExportError(f"--layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    if not dataset_dir.is_dir():
        raise ExportError(f"{dataset_dir}: no such dataset folder")
    present = dataset_configs(dataset_dir)
    configs = configs or present
    unknown = [c for c in configs if c not in present]
    if unknown or not configs:
        raise ExportError(f"{dataset_dir}: no config {', '.join(unknown) or '(none found)'} (configs present: "
                          f"{', '.join(present) or 'none'}; expected data/<config>/*.parquet)")
    if name is not None and len(configs) != 1:
        raise ExportError(f"--as names one config: give one --config (configs: {', '.join(configs)})")
    names = {config: name or config for config in configs}
    rows_by_name = {names[config]: read_config(dataset_dir, config) for config in configs}
    out_dir.mkdir(parents=True, exist_ok=True)
    files = write_layout(layout, rows_by_name, out_dir)
    manifest = {"generator": f"speedbench export {__version__}", "layout": layout, "source": str(dataset_dir),
                "peer_sends": PEER_SENDS[layout], "notes": _selectable(layout, rows_by_name),
                "configs": {names[c]: {"source_config": c, "rows": len(rows_by_name[names[c]]),
                                       "dataset_config_sha256": dataset_fingerprint(dataset_dir, c)}
                            for c in configs},
                "files": {str(p.relative_to(out_dir)): file_sha256(p) for p in files}}
    (out_dir / EXPORT_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


__all__ = ["EXPORT_MANIFEST", "HUB_FOLDER", "LAYOUTS", "PEER_SENDS", "PUBLISHED_CONFIGS", "ExportError", "dataset_configs", "export",
           "read_config", "vllm_row", "write_layout"]
