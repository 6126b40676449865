"""The dataset folder writer: parquet bytes, accumulating configs, card YAML, manifest, load_dataset offline."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from speedbench.dataset_builder.registry import BuiltConfig
from speedbench.dataset_builder.writer import data_file, row_content_hash, write_dataset
from speedbench.schema import ARROW_SCHEMA, DatasetRow


def _rows(category: str, n: int, prefix: str) -> list[DatasetRow]:
    return [DatasetRow(category=category, sub_category="s", turns=[f"{prefix} question {i}?"],
                       source=f"src/{prefix}", src_id=str(i), license="MIT") for i in range(n)]


def test_configs_accumulate_and_qualitative_is_default(tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("hello\n")
    write_dataset(tmp_path / "ds", [BuiltConfig("qualitative", _rows("math", 3, "q"), source_files=[source])],
                  {"seed": 1, "sources": str(tmp_path)})
    write_dataset(tmp_path / "ds", [BuiltConfig("throughput_1k", _rows("low_entropy", 2, "t"))], {"seed": 1})
    card = (tmp_path / "ds" / "README.md").read_text()
    yaml = card.split("---")[1]
    assert "- config_name: qualitative" in yaml and "- config_name: throughput_1k" in yaml
    assert yaml.index("qualitative") < yaml.index("throughput_1k")
    # exactly one default, on qualitative
    assert yaml.count("default: true") == 1
    assert yaml.split("- config_name: throughput_1k")[0].rstrip().endswith("default: true")
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"qualitative", "throughput_1k"}
    q = manifest["configs"]["qualitative"]
    assert q["rows"] == 3 and q["seed"] == 1
    import hashlib
    assert q["source_files"] == {"source.txt": hashlib.sha256(b"hello\n").hexdigest()}
    rows = _rows("math", 3, "q")
    assert q["row_hashes"][rows[0].question_id] == row_content_hash(rows[0])
    assert "numpy" in q["library_versions"]


def test_parquet_schema_order_and_bytes_are_deterministic(tmp_path):
    rows = _rows("coding", 5, "c")
    write_dataset(tmp_path / "a", [BuiltConfig("qualitative", rows)], {"seed": 0})
    write_dataset(tmp_path / "b", [BuiltConfig("qualitative", rows)], {"seed": 0})
    a, b = data_file(tmp_path / "a", "qualitative"), data_file(tmp_path / "b", "qualitative")
    assert a.read_bytes() == b.read_bytes()
    table = pq.read_table(a)
    assert table.schema.remove_metadata().equals(ARROW_SCHEMA)
    assert table.column("src_id").to_pylist() == ["0", "1", "2", "3", "4"]


def test_load_dataset_offline_from_parent_folder(tmp_path, monkeypatch):
    from datasets import load_dataset

    write_dataset(tmp_path / "speed-bench", [BuiltConfig("qualitative", _rows("qa", 4, "x")),
                                             BuiltConfig("throughput_2k", _rows("mixed", 2, "y"))], {})
    monkeypatch.chdir(tmp_path)
    ds = load_dataset("speed-bench", "throughput_2k", split="test")
    assert ds.num_rows == 2 and ds[0]["category"] == "mixed"
    default = load_dataset("speed-bench", split="test")
    assert default.num_rows == 4 and default[0]["turns"] == ["x question 0?"]


def test_empty_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no rows"):
        write_dataset(tmp_path, [BuiltConfig("qualitative", [])], {})
