"""`speedbench run --dataset` reads both layouts: data/<config>/*.parquet (speedbench build, the Hub)
and the reference framework's prepared speed/<config>/test.parquet; placeholders are refused with
their count and the command that resolves them."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
from tests.standins.standin import StandinServer
from speedbench.client.data.workload import WorkloadError, dataset_fingerprint, load_conversations
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow, rows_to_table


def _reference_layout(folder: Path, rows, config: str = "tiny") -> Path:
    target = folder / "speed" / config
    target.mkdir(parents=True)
    pq.write_table(rows_to_table(rows), target / "test.parquet")
    return folder


def _placeholder(n: int) -> DatasetRow:
    return DatasetRow(category="qa", sub_category="x", turns=[PLACEHOLDER_PREFIX + f" (hle {n})"], source="hle",
                      src_id=str(n))


def test_both_layouts_give_the_same_rows_and_fingerprint(tmp_path):
    rows = story_rows(4, multiturn_every=2)
    built = write_dataset(tmp_path / "built", rows)
    reference = _reference_layout(tmp_path / "reference", rows)
    a, b = load_conversations(built, "tiny"), load_conversations(reference, "tiny")
    assert [(c.question_id, c.turns) for c in a] == [(c.question_id, c.turns) for c in b]
    assert [c.turns for c in b] == [r.turns for r in rows]
    assert dataset_fingerprint(built, "tiny") == dataset_fingerprint(reference, "tiny")
    with pytest.raises(WorkloadError, match=r"speed/other/test.parquet.*configs present: speed/tiny"):
        load_conversations(reference, "other")


def test_run_measures_the_reference_layout(tmp_path, models_dir):
    dataset = _reference_layout(tmp_path / "reference", story_rows(3))
    with StandinServer("vllm") as server:
        assert run_cli("vllm", server.url, dataset, tmp_path / "run", models_dir, "--concurrency", "1",
                       "--max-tokens", "8") == 0
    records = read_jsonl(tmp_path / "run" / "records.jsonl")
    assert len(records) == 3 and all(r["error"] is None for r in records)


def test_placeholders_are_counted_with_the_resolving_command(tmp_path):
    rows = story_rows(2) + [_placeholder(1), _placeholder(2), _placeholder(3)]
    reference = _reference_layout(tmp_path / "ref", rows)
    with pytest.raises(WorkloadError) as error:
        load_conversations(reference, "tiny")
    message = str(error.value)
    path = reference / "speed" / "tiny" / "test.parquet"
    assert "3 of 5 rows are unresolved placeholders" in message and "first: row 2" in message
    assert (f"speedbench resolve {path} --config tiny --out {tmp_path / 'ref-resolved' / 'speed' / 'tiny' / 'test.parquet'}"
            f", then --dataset {tmp_path / 'ref-resolved'}") in message

    built = write_dataset(tmp_path / "built", rows[:1] + rows[2:4])
    with pytest.raises(WorkloadError) as error:
        load_conversations(built, "tiny")
    message = str(error.value)
    assert "2 of 3 rows are unresolved placeholders" in message
    assert f"speedbench resolve {built} --out {tmp_path / 'built-resolved'}, then --dataset" in message
