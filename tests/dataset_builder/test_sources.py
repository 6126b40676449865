"""Source adapters: real prompts and metadata from the mirror, and clear errors for bad sources."""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from speedbench.dataset_builder.qualitative.pools import balanced_sample, cap_pool, collect_candidates, embedding_text
from speedbench.dataset_builder.sources import SourceError, SourceFiles, adapter
from speedbench.schema import QUALITATIVE_CATEGORIES, DatasetRow


@pytest.fixture(scope="module")
def pools(sources_dir):
    return collect_candidates(SourceFiles(sources_dir))


def test_every_category_has_a_real_pool_of_at_least_80(pools):
    for category in QUALITATIVE_CATEGORIES:
        assert len(pools[category]) >= 80, category


def test_multilingual_spans_15_languages_and_several_tasks(pools):
    rows = pools["multilingual"]
    assert len({r.language for r in rows} - {"en"}) >= 15
    tasks = {r.sub_category.split("/")[0] for r in rows}
    assert {"translation", "qa", "math"} <= tasks


def test_coding_spans_five_programming_languages(pools):
    languages = {r.sub_category.split("/")[-1] for r in pools["coding"] if "/" in r.sub_category}
    assert {"python", "cpp", "go", "java", "javascript", "rust"} <= languages


def test_multiturn_rows_come_from_multiturn_sources(pools):
    everything = [r for rows in pools.values() for r in rows]
    sources = {r.source for r in everything if r.multiturn}
    assert {"mtbench101/mt-bench-101", "TIGER-Lab/MMLU-Pro", "ZenMoore/RoleBench", "Neph0s/CoSER"} <= sources
    assert all(len(r.turns) <= 7 for r in everything)


def test_roleplay_rows_start_with_a_role_instruction(pools, sources_dir):
    first = json.loads((sources_dir / "rolebench" / "eng_instruction-generalization_role_specific_test.jsonl")
                       .read_text().splitlines()[0])
    row = next(r for r in pools["roleplay"] if r.src_id == "eng_instruction_generalization/1"
               or r.src_id.startswith("eng_instruction_generalization/1-"))
    instruction, _, question = row.turns[0].partition("\n\n")
    assert first["role"] in instruction and question == first["question"].strip()
    # the role instruction is not part of what is embedded
    assert not embedding_text(row).startswith(instruction)
    coser = [r for r in pools["roleplay"] if r.source == "Neph0s/CoSER"]
    assert coser and all("Scenario:" in r.turns[0] for r in coser)
    assert all("[" not in turn for r in coser for turn in r.turns[1:])   # private thoughts stripped


def test_metadata_follows_the_published_schema(pools):
    for category, rows in pools.items():
        for row in rows[:: max(1, len(rows) // 200)]:
            assert row.category == category and re.fullmatch(r"[0-9a-f]{32}", row.question_id)
            assert row.license and row.language and row.source and row.src_id
            if category not in ("coding", "humanities", "math", "stem"):
                assert row.difficulty == "", (category, row.source)


def test_specbench_row_is_the_file_row(sources_dir):
    line = json.loads((sources_dir / "specbench" / "question.jsonl").read_text().splitlines()[0])
    rows = adapter("specbench").candidates(SourceFiles(sources_dir))
    row = next(r for r in rows if r.src_id == str(line["question_id"]))
    assert row.turns == line["turns"] and row.multiturn and row.category == "writing"


def test_balanced_sample_gives_small_sources_their_share():
    groups = ["big"] * 100 + ["small"] * 5 + ["mid"] * 30
    chosen = balanced_sample(groups, 45, np.random.default_rng(0))
    counts = Counter(groups[i] for i in chosen)
    assert counts == {"small": 5, "mid": 20, "big": 20}
    assert balanced_sample(groups[:10], 45, np.random.default_rng(0)).tolist() == list(range(10))


def test_pool_cap_is_seeded(pools):
    a = cap_pool("reasoning", pools["reasoning"], 50, seed=0)
    b = cap_pool("reasoning", pools["reasoning"], 50, seed=0)
    c = cap_pool("reasoning", pools["reasoning"], 50, seed=1)
    assert [r.question_id for r in a.rows] == [r.question_id for r in b.rows]
    assert [r.question_id for r in a.rows] != [r.question_id for r in c.rows]
    assert len(a.rows) == 50 and a.available == len(pools["reasoning"])


# ---- bad sources: the error names the file and the line (or field) -------------------------------------------

def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_named(tmp_path):
    with pytest.raises(SourceError, match=r"specbench/question\.jsonl: source file not found"):
        adapter("specbench").candidates(SourceFiles(tmp_path))


def test_corrupt_jsonl_line_is_named(tmp_path):
    good = json.dumps({"question_id": 1, "category": "writing", "turns": ["Write a poem."]})
    _write(tmp_path, "specbench/question.jsonl", good + "\n" + '{"question_id": 2, "category": "wri\n')
    with pytest.raises(SourceError, match=r"question\.jsonl:2: invalid JSON"):
        adapter("specbench").candidates(SourceFiles(tmp_path))


def test_missing_field_is_named_with_its_line(tmp_path):
    _write(tmp_path, "mtbench101/mtbench101.jsonl",
           json.dumps({"task": "GR", "id": 1, "history": [{"user": "hi", "bot": "hello"}]}) + "\n"
           + json.dumps({"task": "GR", "id": 2}) + "\n")
    with pytest.raises(SourceError, match=r"mtbench101\.jsonl:2: missing field 'history'"):
        adapter("mtbench101").candidates(SourceFiles(tmp_path))


def test_wrong_csv_width_and_truncated_gzip_are_named(tmp_path):
    _write(tmp_path, "mmlu/econometrics_test.csv", 'q,a,b,c,d,A\n"only",two\n')
    with pytest.raises(SourceError, match=r"econometrics_test\.csv:2: expected 6 fields, found 2"):
        adapter("mmlu").candidates(SourceFiles(tmp_path))
    path = tmp_path / "humaneval" / "HumanEval.jsonl.gz"
    path.parent.mkdir(parents=True)
    data = gzip.compress(((json.dumps({"task_id": "HumanEval/0", "prompt": "def f():\n"}) + "\n") * 50).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(SourceError, match=r"HumanEval\.jsonl\.gz: cannot be read"):
        adapter("humaneval").candidates(SourceFiles(tmp_path))


def test_unknown_category_in_a_source_is_named(tmp_path):
    _write(tmp_path, "specbench/question.jsonl", json.dumps({"question_id": 7, "category": "poetry", "turns": ["x"]}) + "\n")
    with pytest.raises(SourceError, match=r"question\.jsonl:1: unknown Spec-Bench category 'poetry'"):
        adapter("specbench").candidates(SourceFiles(tmp_path))


def test_cli_reports_a_bad_source_and_fails(tmp_path, capsys):
    from speedbench.cli import main

    (tmp_path / "sources").mkdir()
    code = main(["build", "--configs", "qualitative", "--sources", str(tmp_path / "sources"),
                 "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 1
    assert "source file not found" in capsys.readouterr().err
    assert not (tmp_path / "out" / "data").exists()


def test_cli_unknown_config_lists_the_available_ones(tmp_path, capsys):
    from speedbench.cli import main

    assert main(["build", "--configs", "nope", "--sources", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown config(s) nope" in err and "qualitative" in err


def test_row_validation_rejects_empty_turns():
    with pytest.raises(ValueError, match="turns must be non-empty"):
        DatasetRow(category="qa", sub_category="s", turns=[""], source="s", src_id="1")
