"""`speedbench export`: each layout read back with the loading code its peer uses, field by field."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from speedbench.cli import main
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow
from tests.standins.fixtures import story_rows, write_dataset

CONFIG = "qualitative"  # vLLM's --speed-bench-dataset-subset only takes the published config names


@pytest.fixture()
def dataset(tmp_path) -> tuple[Path, list[dict]]:
    rows = story_rows(7, multiturn_every=3)  # rows 2 and 5 have three turns
    rows.append(DatasetRow(category="multilingual", sub_category="x", turns=["Grüße, \"quotes\" and a\nnewline ✓"],
                           source="test", src_id="unicode"))
    folder = write_dataset(tmp_path / "dataset", rows, config=CONFIG)
    return folder, [row.to_dict() for row in rows]


def export(dataset_dir: Path, layout: str, out: Path) -> int:
    return main(["export", str(dataset_dir), "--layout", layout, "--out", str(out)])


def test_vllm_layout_read_back_with_pandas_as_vllm_does(dataset, tmp_path):
    import pandas as pd

    folder, rows = dataset
    assert export(folder, "vllm", tmp_path / "out") == 0
    frame = pd.read_json(tmp_path / "out" / f"{CONFIG}.jsonl", lines=True)  # vllm's SpeedBench.load_data
    assert "messages" in frame.columns and len(frame) == len(rows)
    for (_, got), want in zip(frame.iterrows(), rows):
        assert got["question_id"] == want["question_id"] and got["category"] == want["category"]
        assert [m["role"] for m in got["messages"]] == ["user"] * len(want["turns"])
        assert [m["content"] for m in got["messages"]] == want["turns"]
        assert got["messages"][0]["content"] == want["turns"][0]  # what vLLM sends: the first turn only
        assert list(got["turns"]) == want["turns"] and got["sub_category"] == want["sub_category"]
        assert bool(got["multiturn"]) == want["multiturn"]


def test_vllm_layout_rows_have_aiperfs_speed_bench_shape(dataset, tmp_path):
    folder, rows = dataset
    export(folder, "vllm", tmp_path / "out")
    lines = (tmp_path / "out" / f"{CONFIG}.jsonl").read_text(encoding="utf-8").splitlines()
    for line, want in zip(lines, rows):
        row = json.loads(line)
        # aiperf's SpeedBenchRow: 32-character question_id, a category, messages with role and content
        assert len(row["question_id"]) == 32 and row["category"]
        assert all(m["role"].strip() and m["content"].strip() and m["content"] != PLACEHOLDER_PREFIX
                   for m in row["messages"])
        assert [m["content"] for m in row["messages"]] == want["turns"]


def test_sglang_layout_read_back_line_by_line(dataset, tmp_path):
    folder, rows = dataset
    assert export(folder, "sglang", tmp_path / "out") == 0
    with open(tmp_path / "out" / f"{CONFIG}.jsonl", encoding="utf-8") as handle:  # as bench_serving reads it
        got = [json.loads(line) for line in handle]
    assert got == rows  # every published field, unchanged
    assert [row.get("turns", [])[0] for row in got] == [r["turns"][0] for r in rows]


def test_specdec_layout_read_back_with_datasets_parquet(dataset, tmp_path):
    from datasets import load_dataset

    folder, rows = dataset
    assert export(folder, "specdec", tmp_path / "out") == 0
    path = tmp_path / "out" / "speed" / CONFIG / "test.parquet"
    loaded = load_dataset("parquet", data_files={"test": [str(path)]}, split="test")  # specdec_bench's loader
    assert len(loaded) == len(rows)
    for got, want in zip(loaded, rows):
        assert got == want


def test_llamacpp_layout_loads_as_nvidia_speed_bench(dataset, tmp_path, monkeypatch):
    from datasets import get_dataset_config_names, load_dataset

    folder, rows = dataset
    assert export(folder, "llamacpp", tmp_path / "out") == 0
    monkeypatch.chdir(tmp_path / "out")  # llama.cpp's speed_bench.py run from the export folder
    assert get_dataset_config_names("nvidia/SPEED-Bench") == [CONFIG]
    loaded = load_dataset("nvidia/SPEED-Bench", name=CONFIG, split="test")
    assert [dict(row) for row in loaded] == rows
    assert [str(t).strip() for t in loaded[2]["turns"]] == rows[2]["turns"]


def test_two_exports_load_their_own_rows_from_one_datasets_cache(dataset, tmp_path, monkeypatch):
    """datasets caches a local folder by name, config and card metadata: two exports of different
    rows (both nvidia/SPEED-Bench, same config) loaded the first one's rows before the card carried
    each config's data sha256 (a llama.cpp user's second export would have measured the first)."""
    from datasets import load_dataset

    folder, rows = dataset
    fewer = write_dataset(tmp_path / "fewer", story_rows(3), config=CONFIG)
    cache = str(tmp_path / "hf-cache")
    loaded = {}
    for name, source in (("all", folder), ("fewer", fewer)):
        assert export(source, "llamacpp", tmp_path / name) == 0
        monkeypatch.chdir(tmp_path / name)
        loaded[name] = [dict(row) for row in load_dataset("nvidia/SPEED-Bench", name=CONFIG, split="test", cache_dir=cache)]
    assert loaded["all"] == rows
    assert loaded["fewer"] == [row.to_dict() for row in story_rows(3)]


def test_export_manifest_names_every_file_with_its_hash(dataset, tmp_path):
    folder, rows = dataset
    export(folder, "llamacpp", tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "export.json").read_text())
    assert manifest["layout"] == "llamacpp" and manifest["configs"][CONFIG]["rows"] == len(rows)
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((tmp_path / "out" / name).read_bytes()).hexdigest() == digest
    assert "nvidia/SPEED-Bench/README.md" in manifest["files"]


def test_export_is_byte_identical_when_repeated(dataset, tmp_path):
    folder, _ = dataset
    for name in ("a", "b"):
        export(folder, "specdec", tmp_path / name)
    assert (tmp_path / "a" / "speed" / CONFIG / "test.parquet").read_bytes() == \
        (tmp_path / "b" / "speed" / CONFIG / "test.parquet").read_bytes()


def test_placeholder_rows_are_refused_with_count_and_fix(tmp_path, capsys):
    rows = story_rows(3) + [DatasetRow(category="qa", sub_category="", turns=[PLACEHOLDER_PREFIX + "\n\n{q}"],
                                       source="s", src_id="9")]
    folder = write_dataset(tmp_path / "dataset", rows, config=CONFIG)
    assert export(folder, "vllm", tmp_path / "out") == 1
    error = capsys.readouterr().err
    assert "1 of 4 rows are unresolved placeholders" in error and "speedbench resolve" in error
    assert not (tmp_path / "out" / f"{CONFIG}.jsonl").exists()


def test_unknown_config_is_named(dataset, tmp_path, capsys):
    folder, _ = dataset
    assert main(["export", str(folder), "--layout", "sglang", "--out", str(tmp_path / "o"), "--config", "nope"]) == 1
    error = capsys.readouterr().err
    assert "no config nope" in error and f"configs present: {CONFIG}" in error


def test_a_config_vllm_cannot_select_is_exported_under_a_published_name(tmp_path, capsys):
    import pandas as pd

    rows = story_rows(4)
    write_dataset(tmp_path / "dataset", rows, config="lite_qualitative")
    folder = write_dataset(tmp_path / "dataset", rows[:2], config="random_1k")
    # vllm bench serve's --speed-bench-dataset-subset accepts only the published names: said, not refused
    assert export(folder, "vllm", tmp_path / "plain") == 0
    out = capsys.readouterr().out
    assert "lite_qualitative.jsonl" in out and "--as qualitative" in out and "random_1k" in out
    assert main(["export", str(folder), "--layout", "vllm", "--out", str(tmp_path / "out"),
                 "--config", "lite_qualitative", "--as", "qualitative"]) == 0
    out = capsys.readouterr().out
    assert "qualitative: 4 rows (config lite_qualitative)" in out and "cannot select" not in out
    frame = pd.read_json(tmp_path / "out" / "qualitative.jsonl", lines=True)
    assert list(frame["question_id"]) == [r.question_id for r in rows]
    manifest = json.loads((tmp_path / "out" / "export.json").read_text())
    assert manifest["configs"]["qualitative"]["source_config"] == "lite_qualitative"
    assert not (tmp_path / "out" / "lite_qualitative.jsonl").exists()


def test_as_takes_one_config_and_a_missing_folder_is_named(dataset, tmp_path, capsys):
    folder, _ = dataset
    assert main(["export", str(folder), "--layout", "vllm", "--out", str(tmp_path / "o"), "--as", "x"]) == 0
    assert (tmp_path / "o" / "x.jsonl").exists()  # the folder's only config
    write_dataset(folder, story_rows(2), config="throughput_1k")
    capsys.readouterr()
    assert main(["export", str(folder), "--layout", "vllm", "--out", str(tmp_path / "p"), "--as", "x"]) == 1
    assert "--as names one config: give one --config (configs: qualitative, throughput_1k)" in capsys.readouterr().err
    assert export(tmp_path / "nowhere", "vllm", tmp_path / "q") == 1
    assert f"{tmp_path / 'nowhere'}: no such dataset folder" in capsys.readouterr().err
