"""Small real builds of every Throughput bucket and random control from the mirror.

Checks every row: exactly N o200k_base tokens (recounted), the task instruction intact at the end
(only padding after it), the schema, determinism, and loading with `datasets` offline.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import speedbench.dataset_builder.throughput  # noqa: F401  (registers the configs)
from speedbench.dataset_builder.registry import CONFIG_BUILDERS, BuildContext, available_configs
from speedbench.dataset_builder.throughput import answer_selection, book_continuation, code_completion
from speedbench.dataset_builder.throughput import dialogue_continuation, text_sorting
from speedbench.dataset_builder.throughput.base import Recipe
from speedbench.dataset_builder.throughput.bucket import task_types
from speedbench.dataset_builder.throughput.fit import padding_text
from speedbench.dataset_builder.writer import data_file, write_dataset
from speedbench.schema import PLACEHOLDER_PREFIX
from speedbench.tokenization.o200k import o200k

# Small per-tier counts keep the whole module around a minute: 32k prompts are expensive.
PER_TIER = {"throughput_1k": 4, "throughput_2k": 3, "throughput_8k": 2, "throughput_16k": 1, "throughput_32k": 1}
RANDOM = {"random_1k": 3, "random_32k": 1}
TAILS = {
    "code_completion": code_completion.INSTRUCTION,
    "text_sorting": text_sorting.TAIL,
    "answer_selection": answer_selection.TAIL,
    "dialogue_continuation": dialogue_continuation.TAIL,
    "book_continuation": book_continuation.TAIL,
}


def build(sources: Path, config: str, per_tier: int, seed: int = 0):
    ctx = BuildContext(sources=sources, out_dir=Path("unused"), seed=seed,
                       options={"per_tier": per_tier}, progress=False)
    return CONFIG_BUILDERS[config](ctx)


@pytest.fixture(scope="module")
def built(sources_dir):
    return {config: build(sources_dir, config, n) for config, n in {**PER_TIER, **RANDOM}.items()}


def test_all_configs_are_registered():
    names = set(available_configs())
    assert {f"throughput_{b}" for b in ("1k", "2k", "8k", "16k", "32k")} <= names
    assert {f"random_{b}" for b in ("1k", "2k", "8k", "16k", "32k")} <= names


def test_every_row_has_exactly_n_tokens(built):
    encoding = o200k()
    for config, result in built.items():
        n_tokens = result.stats["n_tokens"]
        assert n_tokens == int(config.split("_")[1][:-1]) * 1000
        for row in result.rows:
            assert len(encoding.encode(row.turns[0], disallowed_special=())) == n_tokens, (config, row.src_id)


def test_tiers_sizes_and_fields(built):
    for config, per_tier in PER_TIER.items():
        rows = built[config].rows
        assert [r.category for r in rows] == (["low_entropy"] * per_tier + ["mixed"] * per_tier
                                             + ["high_entropy"] * per_tier)
        for row in rows:
            assert len(row.question_id) == 32 and not row.multiturn and len(row.turns) == 1
            assert row.sub_category in {*TAILS, "exam_qa", "creative_writing"}
            assert Recipe.parse(row.src_id).units
        assert len({r.question_id for r in rows}) == len(rows)
    for config, count in RANDOM.items():
        assert [r.category for r in built[config].rows] == ["random"] * count


def test_instruction_is_never_cut(built, sources_dir):
    tasks = task_types(str(sources_dir), 0)
    for config in PER_TIER:
        for row in built[config].rows:
            text = row.turns[0]
            recipe = Recipe.parse(row.src_id)
            prompt = text[: len(text) - recipe.padding_chars]
            assert text[len(prompt):] == padding_text(recipe.padding_chars)
            if row.sub_category in TAILS:
                assert prompt.endswith(TAILS[row.sub_category]), (config, row.sub_category)
            elif row.sub_category == "exam_qa":
                question = tasks["exam_qa"].items[recipe.units[-1]]["question"]
                assert prompt.endswith(f"Question: {question}\n\nAnswer:")
            elif row.sub_category == "creative_writing":
                query = tasks["creative_writing"].queries[recipe.units[0]]
                assert prompt == query + "\n"
            else:
                pytest.fail(f"unexpected sub_category {row.sub_category}")


def test_answer_selection_keeps_the_right_answer(built, sources_dir):
    task = task_types(str(sources_dir), 0)["answer_selection"]
    for config in PER_TIER:
        for row in built[config].rows:
            if row.sub_category != "answer_selection":
                continue
            qid = Recipe.parse(row.src_id).units[0]
            right = task.questions[qid]["answers"][task.questions[qid]["right"]].strip()
            assert right in row.turns[0]


def test_code_rows_name_package_version_and_path(built):
    import importlib.metadata
    seen_pypi = False
    for config in PER_TIER:
        for row in built[config].rows:
            if row.sub_category == "code_completion" and row.source.startswith("pypi:"):
                seen_pypi = True
                unit = Recipe.parse(row.src_id).units[0]
                package, _, path = unit.partition(":")
                name, _, version = package.partition("==")
                assert importlib.metadata.version(name) == version
                first_file = row.turns[0].split("\n\n### File: ", 1)[1]
                path, _, lines = path.partition("#L")  # a long file is split into line ranges
                assert first_file.startswith(path + (f" (lines {lines})" if lines else "") + "\n")
    assert seen_pypi


def test_card_section_and_reuse_statistics(built):
    for config in PER_TIER:
        result = built[config]
        assert f"`{config}`" in result.card_section and "Answer now please." in result.card_section
        for tier, reuse in result.stats["reuse"].items():
            assert 0 < reuse["distinct_ratio"] <= 1
            assert reuse["prompts"] == PER_TIER[config]
    assert "23%" in built["random_1k"].card_section


def test_build_is_deterministic(built, sources_dir, tmp_path):
    again = build(sources_dir, "throughput_1k", PER_TIER["throughput_1k"])
    assert again.rows == built["throughput_1k"].rows
    other_seed = build(sources_dir, "throughput_1k", PER_TIER["throughput_1k"], seed=1)
    assert other_seed.rows != built["throughput_1k"].rows
    for name, result in (("a", built["throughput_1k"]), ("b", again)):
        write_dataset(tmp_path / name, [result], {"seed": 0, "sources": str(sources_dir)})
    assert (data_file(tmp_path / "a", "throughput_1k").read_bytes()
            == data_file(tmp_path / "b", "throughput_1k").read_bytes())


def test_load_dataset_offline_from_the_parent_folder(built, sources_dir, tmp_path, monkeypatch):
    from datasets import load_dataset
    folder = tmp_path / "speed-bench"
    write_dataset(folder, [built["throughput_8k"], built["random_1k"]], {"seed": 0, "sources": str(sources_dir)})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_home" / "datasets"))
    dataset = load_dataset("speed-bench", "throughput_8k", split="test")
    assert dataset.num_rows == 3 * PER_TIER["throughput_8k"]
    assert dataset[0]["turns"] == built["throughput_8k"].rows[0].turns
    assert set(dataset["category"]) == {"low_entropy", "mixed", "high_entropy"}
    assert not any(t[0].startswith(PLACEHOLDER_PREFIX) for t in dataset["turns"])
    table = pq.read_table(data_file(folder, "throughput_8k"))
    assert table.num_rows == dataset.num_rows
    assert "throughput_8k" in (folder / "README.md").read_text() and os.path.exists(folder / "manifest.json")
