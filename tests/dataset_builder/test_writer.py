"""The dataset folder writer: parquet bytes, accumulating configs, card YAML, manifest, load_dataset offline."""
from __future__ import annotations

import hashlib
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


def test_load_dataset_of_a_rebuilt_or_other_folder_gives_its_own_rows(tmp_path, monkeypatch):
    """datasets caches a local folder by folder name, config and card metadata, not by content:
    without the data sha256 in the card, a rebuild (or another folder named speed-bench) loaded the
    rows cached for the first one."""
    from datasets import load_dataset

    cache = tmp_path / "hf-cache"  # one cache for every load, as on a user's machine

    def build_and_load(parent, prefix, n):
        write_dataset(parent / "speed-bench", [BuiltConfig("qualitative", _rows("qa", n, prefix))], {})
        monkeypatch.chdir(parent)
        return load_dataset("speed-bench", "qualitative", split="test", cache_dir=str(cache))["turns"]

    assert build_and_load(tmp_path, "first", 4) == [[f"first question {i}?"] for i in range(4)]
    assert build_and_load(tmp_path, "rebuilt", 2) == [["rebuilt question 0?"], ["rebuilt question 1?"]]
    (tmp_path / "elsewhere").mkdir()
    assert build_and_load(tmp_path / "elsewhere", "other", 3) == [[f"other question {i}?"] for i in range(3)]
    yaml = (tmp_path / "speed-bench" / "README.md").read_text().split("---")[1]
    parquet = data_file(tmp_path / "speed-bench", "qualitative")
    by_hand = hashlib.sha256(f"{parquet.name} {hashlib.sha256(parquet.read_bytes()).hexdigest()}\n".encode()).hexdigest()
    assert f'description: "data sha256 {by_hand}"' in yaml
