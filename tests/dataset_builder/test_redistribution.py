"""Placeholder export -> resolve round trip, published-format rows, and the refusal to benchmark placeholders."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import speedbench.dataset_builder.throughput  # noqa: F401
from speedbench.cli import main as cli_main
from speedbench.dataset_builder.redistribution import (
    UnresolvedPlaceholderError, assert_no_placeholders, export_placeholders, resolve_rows)
from speedbench.dataset_builder.registry import CONFIG_BUILDERS, BuildContext
from speedbench.dataset_builder.writer import data_file, write_dataset
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow
from speedbench.tokenization.o200k import count_tokens

# The published dataset's columns (no language / license).
PUBLISHED_SCHEMA = pa.schema([
    ("question_id", pa.string()), ("category", pa.string()), ("sub_category", pa.string()),
    ("turns", pa.list_(pa.string())), ("source", pa.string()), ("src_id", pa.string()),
    ("difficulty", pa.string()), ("multiturn", pa.bool_())])
HLE_ID = "668825f80a642802bdfeadfa"  # in the mirror's HLE subset (benchfortir/hle/top.json)


@pytest.fixture(scope="module")
def built_2k(sources_dir):
    ctx = BuildContext(sources=sources_dir, out_dir=Path("unused"), seed=0, options={"per_tier": 3}, progress=False)
    return CONFIG_BUILDERS["throughput_2k"](ctx)


def test_export_then_resolve_gives_identical_rows(built_2k, sources_dir):
    exported = export_placeholders(built_2k.rows, sources_dir, "throughput_2k")
    placeholders = [r for r in exported if r.is_placeholder]
    # The mixed tier uses HLE (gated) or StackSelect (CC BY-SA): those rows must become placeholders.
    assert {r.category for r in placeholders} == {"mixed"}
    assert all("{prompt}" in r.turns[0] and "exam_qa" in r.turns[0] or "answer_selection" in r.turns[0]
               for r in placeholders)
    assert all(r.src_id == o.src_id and r.question_id == o.question_id
               for r, o in zip(exported, built_2k.rows))
    with pytest.raises(UnresolvedPlaceholderError):
        assert_no_placeholders(exported)
    resolved, report = resolve_rows(exported, sources_dir, config="throughput_2k")
    assert report.unresolved == [] and report.resolved == len(placeholders)
    assert resolved == built_2k.rows
    assert_no_placeholders(resolved)


def test_round_trip_through_parquet_and_the_cli(built_2k, sources_dir, tmp_path):
    exported = replace(built_2k, rows=export_placeholders(built_2k.rows, sources_dir, "throughput_2k"))
    folder = tmp_path / "export"
    write_dataset(folder, [exported], {"seed": 0, "sources": str(sources_dir)})
    out = tmp_path / "resolved"
    assert cli_main(["resolve", str(folder), "--out", str(out), "--sources", str(sources_dir)]) == 0
    table = pq.read_table(data_file(out, "throughput_2k"))
    assert table.column("turns").to_pylist() == [r.turns for r in built_2k.rows]


def test_random_rows_resolve_from_their_seed(sources_dir):
    ctx = BuildContext(sources=sources_dir, out_dir=Path("unused"), seed=3, options={"per_tier": 2}, progress=False)
    rows = CONFIG_BUILDERS["random_2k"](ctx).rows
    blanked = [replace(r, turns=[f"{PLACEHOLDER_PREFIX}\n\nspeed-bench recipe (task uniform_o200k, 2000 o200k_base "
                                 "tokens): run `speedbench resolve`.\n{prompt}"]) for r in rows]
    resolved, report = resolve_rows(blanked, sources_dir, config="random_2k")
    assert resolved == rows and report.resolved == 2


def published_row(question_id: str, category: str, source: str, src_id: str, template: str = "") -> dict:
    turn = PLACEHOLDER_PREFIX + (f"\n\n{template}" if template else "")
    return {"question_id": question_id, "category": category, "sub_category": "x", "turns": [turn],
            "source": source, "src_id": src_id, "difficulty": "", "multiturn": False}


def test_resolve_hand_written_published_rows(sources_dir, tmp_path):
    rows = [
        published_row("a" * 32, "mixed", "cais/hle", HLE_ID),                            # v1.0: bare HLE id
        published_row("b" * 32, "mixed", "AdaLEval/stackselect", "38560748"),            # v1.0: question id
        published_row("c" * 32, "high_entropy",
                      "https://huggingface.co/datasets/RUCAIBox/BAMBOO/raw/main/showspred_4k.jsonl",
                      "showspred_3_17"),                                                  # row indices
        published_row("d" * 32, "mixed", "cais/hle", f"hle_test_{HLE_ID}_demos_seed42"),  # id inside a longer src_id
        published_row("e" * 32, "low_entropy", "AdaLEval/textsort", "textsort_3"),       # not in the mirror
        {**published_row("f" * 32, "high_entropy", "RUCAIBox/BAMBOO", "x"), "turns": ["A full prompt."]},
    ]
    path = tmp_path / "throughput_1k.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=PUBLISHED_SCHEMA), path)
    out = tmp_path / "resolved.parquet"
    # One source is missing from the mirror: the command reports it, fails and writes nothing...
    assert cli_main(["resolve", str(path), "--config", "throughput_1k", "--out", str(out),
                     "--sources", str(sources_dir)]) == 1
    assert not out.exists()
    # ...unless told to leave it; the file keeps the published columns.
    assert cli_main(["resolve", str(path), "--config", "throughput_1k", "--out", str(out),
                     "--sources", str(sources_dir), "--allow-unresolved"]) == 0
    table = pq.read_table(out)
    assert table.schema.names == PUBLISHED_SCHEMA.names
    turns = {r["question_id"][0]: r["turns"][0] for r in table.to_pylist()}
    # The reference keeps N - len(question) + 1 tokens before an HLE question: one over the bucket.
    for key, length in zip("abcd", (1001, 1000, 1000, 1001)):
        assert not turns[key].startswith(PLACEHOLDER_PREFIX) and count_tokens(turns[key]) == length, key
    assert "Which condition of Arrhenius's sixth impossibility theorem" in turns["a"]
    assert turns["a"].startswith("Please answer the question below.") and turns["a"].endswith("E. Weak Quality Addition")
    assert "I need to create a dataframe out of range 'A3:D20'" in turns["b"]
    assert turns["e"].startswith(PLACEHOLDER_PREFIX)
    assert turns["f"] == "A full prompt."
    with pytest.raises(UnresolvedPlaceholderError):
        assert_no_placeholders(table.to_pylist(), str(out))


def test_published_qualitative_hle_row_gets_the_question(sources_dir):
    row = DatasetRow(category="humanities", sub_category="Philosophy", turns=[PLACEHOLDER_PREFIX],
                     source="cais/hle", src_id=HLE_ID, question_id="1" * 32)
    resolved, report = resolve_rows([row], sources_dir, config="qualitative")
    assert report.resolved == 1
    assert resolved[0].turns[0].startswith("Which condition of Arrhenius's sixth impossibility theorem")


def test_own_recipe_with_wrong_sources_is_reported(built_2k, sources_dir):
    exported = export_placeholders(built_2k.rows, sources_dir, "throughput_2k")
    row = next(r for r in exported if r.is_placeholder)
    broken = replace(row, src_id=row.src_id.replace("@k=", "@k=1"))  # a different cut: wrong length
    _, report = resolve_rows([broken], sources_dir, config="throughput_2k")
    assert len(report.unresolved) == 1 and "tokens" in report.unresolved[0][1]


def test_source_absent_from_the_mirror_is_called_missing(sources_dir):
    assert not (sources_dir / "adaleval" / "textsort").exists()
    row = DatasetRow(category="low_entropy", sub_category="x", turns=[PLACEHOLDER_PREFIX],
                     source="AdaLEval/textsort", src_id="textsort_3", question_id="3" * 32)
    _, report = resolve_rows([row], sources_dir, config="throughput_1k")
    [(_, reason)] = report.unresolved
    assert "not in the offline mirror" in reason and "--online" in reason


def test_placeholder_in_a_later_turn_is_found(sources_dir):
    row = DatasetRow(category="qa", sub_category="x", turns=["A real first turn.", PLACEHOLDER_PREFIX + " {q}"],
                     source="mtbench101/mt-bench-101", src_id="5", question_id="4" * 32)
    assert row.is_placeholder
    with pytest.raises(UnresolvedPlaceholderError, match="4" * 32):
        assert_no_placeholders([row])
    with pytest.raises(UnresolvedPlaceholderError):
        assert_no_placeholders([{"question_id": "q", "turns": ["fine", PLACEHOLDER_PREFIX]}])
    resolved, report = resolve_rows([row], sources_dir, config="qualitative")
    assert report.already_complete == 0 and report.resolved == 0
    [(qid, reason)] = report.unresolved
    assert qid == "4" * 32 and "turn 2" in reason
    assert resolved == [row]


def test_workload_refuses_a_placeholder_in_a_later_turn(tmp_path):
    from speedbench.client.data.workload import WorkloadError, load_conversations

    rows = [{"question_id": "5" * 32, "category": "qa", "turns": ["A real first turn.", PLACEHOLDER_PREFIX]}]
    path = tmp_path / "data" / "qualitative" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(WorkloadError, match="placeholder"):
        load_conversations(tmp_path, "qualitative")
