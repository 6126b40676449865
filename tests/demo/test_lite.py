"""SPEED-Lite configs: deterministic, stratified, nested subsets of the parent configs."""
from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import pytest

from speedbench.dataset_builder.registry import BuildContext, available_configs
from speedbench.dataset_builder.writer import data_file, write_dataset
from speedbench.schema import QUALITATIVE_CATEGORIES


def _build(folder, name, seed=0, **options):
    ctx = BuildContext(sources=folder, out_dir=folder, seed=seed, options=options, progress=False)
    built = available_configs()[name](ctx)
    write_dataset(folder, [built], {"seed": seed, "options": options})
    return built


def _parent(folder, config):
    return pq.read_table(data_file(folder, config)).to_pylist()


def test_lite_qualitative_is_a_seeded_stratified_subset(tmp_path, parents_writer):
    folder = parents_writer(tmp_path / "ds", per_category=5)
    built = _build(folder, "lite_qualitative", lite_per_category=2)
    parent = _parent(folder, "qualitative")
    # Expected, computed independently: per category, the 2 smallest sha256("0:<question_id>").
    expected = set()
    for category in QUALITATIVE_CATEGORIES:
        ids = [r["question_id"] for r in parent if r["category"] == category]
        expected.update(sorted(ids, key=lambda q: hashlib.sha256(f"0:{q}".encode()).hexdigest())[:2])
    written = _parent(folder, "lite_qualitative")
    assert {r["question_id"] for r in written} == expected
    assert len(written) == 2 * len(QUALITATIVE_CATEGORIES)
    # Rows are the parent's rows unchanged, in the parent's order.
    by_id = {r["question_id"]: r for r in parent}
    assert all(r == by_id[r["question_id"]] for r in written)
    order = [r["question_id"] for r in parent if r["question_id"] in expected]
    assert [r["question_id"] for r in written] == order
    assert built.stats["parent"]["origin"] == "dataset folder"
    assert "exact subset" in built.card_section
    assert "lite_qualitative" in (folder / "README.md").read_text()


def test_lite_is_nested_deterministic_and_seeded(tmp_path, parents_writer):
    folder = parents_writer(tmp_path / "ds", per_category=6)
    small = {r.question_id for r in _build(folder, "lite_qualitative", lite_per_category=2).rows}
    first_bytes = data_file(folder, "lite_qualitative").read_bytes()
    large = {r.question_id for r in _build(folder, "lite_qualitative", lite_per_category=4).rows}
    assert small < large
    _build(folder, "lite_qualitative", lite_per_category=2)
    assert data_file(folder, "lite_qualitative").read_bytes() == first_bytes
    other_seed = {r.question_id for r in _build(folder, "lite_qualitative", seed=7, lite_per_category=2).rows}
    assert other_seed != small


def test_lite_throughput_and_loading_with_datasets(tmp_path, parents_writer, monkeypatch):
    folder = parents_writer(tmp_path / "speed-bench", per_tier=4)
    _build(folder, "lite_throughput_1k", lite_per_tier=3)
    from datasets import load_dataset

    monkeypatch.chdir(tmp_path)
    loaded = load_dataset("speed-bench", "lite_throughput_1k", split="test")
    assert len(loaded) == 9
    assert sorted(set(loaded["category"])) == ["high_entropy", "low_entropy", "mixed"]


def test_max_prompt_tokens_filter_and_short_strata(tmp_path, parents_writer):
    folder = parents_writer(tmp_path / "ds", per_category=3, long_every=3)  # row 2 of each category is long
    with pytest.raises(ValueError, match="fewer than 3 rows"):
        _build(folder, "lite_qualitative", lite_per_category=3, lite_max_prompt_tokens=500)
    built = _build(folder, "lite_qualitative", lite_per_category=3, lite_max_prompt_tokens=500, allow_short=True)
    assert all(len(r.turns[0]) < 2000 for r in built.rows)
    assert built.stats["dropped_over_max_tokens"] == {c: 1 for c in sorted(QUALITATIVE_CATEGORIES)}
    assert set(built.stats["rows_per_stratum"].values()) == {2}
    assert "500 `o200k_base` tokens" in built.card_section
