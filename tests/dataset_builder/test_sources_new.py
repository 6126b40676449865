"""The adapters for LiveCodeBench, Code Contests, HumanEvalPack and MMLU-Pro, and Spec-Bench's exclusion.

Expected values are read from the mirror's files independently of the adapters (json / pyarrow
here), and each adapter is also run on a small corrupt copy written to tmp_path: the error names
the file and the row.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from speedbench.dataset_builder.qualitative.pools import collect_candidates
from speedbench.dataset_builder.sources import ADAPTER_MODULES, SourceError, SourceFiles, adapter, all_adapters

HARD_CATEGORIES = ("coding", "humanities", "math", "stem")
LANGUAGE_NAMES = {"python": "Python", "cpp": "C++", "java": "Java", "go": "Go", "javascript": "JavaScript",
                  "rust": "Rust"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def pools(sources_dir):
    return collect_candidates(SourceFiles(sources_dir))


# ---- Spec-Bench is a comparison set only ----------------------------------------------------------------------

def test_specbench_is_never_a_candidate(pools):
    assert "specbench" not in ADAPTER_MODULES
    sources = {r.source for rows in pools.values() for r in rows}
    assert "hemingkx/Spec-Bench" not in sources
    assert all(not r.sub_category.startswith("spec_bench/") for rows in pools.values() for r in rows)


def test_a_specbench_row_slipped_into_a_pool_is_refused(sources_dir, monkeypatch):
    import speedbench.dataset_builder.qualitative.pools as pools_module

    specbench = adapter("specbench")
    monkeypatch.setattr(pools_module, "all_adapters", lambda: [specbench])
    with pytest.raises(ValueError, match="from Spec-Bench, which is a comparison set only"):
        pools_module.collect_candidates(SourceFiles(sources_dir))


# ---- LiveCodeBench -------------------------------------------------------------------------------------------

def test_livecodebench_rows_are_the_problems_with_platform_and_difficulty(sources_dir):
    rows = {r.src_id: r for r in adapter("livecodebench").candidates(SourceFiles(sources_dir))}
    problems = _jsonl(sources_dir / "livecodebench" / "problems.jsonl")
    for problem in problems:
        row = rows[problem["question_id"]]
        assert row.turns[0].startswith(problem["question_content"].strip())
        platform, language = row.sub_category.split("/")[1:]
        if problem["starter_code"].strip():
            assert problem["starter_code"].rstrip() in row.turns[0] and language == "python"
        else:
            assert row.turns[0].endswith(f"Write the solution in {LANGUAGE_NAMES[language]}.")
        assert row.difficulty == problem["difficulty"] and platform == problem["platform"]
    qwen = _jsonl(sources_dir / "livecodebench" / "livecodebench_v5.jsonl")
    extra = {q["question_id"] for q in qwen} - {p["question_id"] for p in problems}
    extra_atcoder = {q for q in extra if q.startswith(("abc", "arc", "agc"))}
    assert set(rows) == {p["question_id"] for p in problems} | extra_atcoder   # unlabelled LeetCode left out
    assert all(rows[q].difficulty in ("easy", "medium", "hard") for q in extra_atcoder)
    assert rows["abc365_b"].difficulty == "easy" and "second largest" in rows["abc365_b"].turns[0]
    assert "Question:" not in rows["abc365_b"].turns[0]
    assert len({r.sub_category.split("/")[-1] for r in rows.values()}) == 6   # six solution languages


def test_livecodebench_bad_difficulty_names_file_and_line(sources_dir, tmp_path):
    lines = (sources_dir / "livecodebench" / "problems.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    broken = json.loads(lines[1])
    broken["difficulty"] = "impossible"
    folder = tmp_path / "livecodebench"
    folder.mkdir()
    (folder / "problems.jsonl").write_text("\n".join([lines[0], json.dumps(broken), lines[2]]) + "\n")
    shutil.copy(sources_dir / "livecodebench" / "livecodebench_v5.jsonl", folder)
    with pytest.raises(SourceError, match=r"problems\.jsonl:2: field 'difficulty' is 'impossible'"):
        adapter("livecodebench").candidates(SourceFiles(tmp_path))
    del broken["question_content"]
    broken["difficulty"] = "hard"
    (folder / "problems.jsonl").write_text("\n".join([lines[0], lines[2], json.dumps(broken)]) + "\n")
    with pytest.raises(SourceError, match=r"problems\.jsonl:3: missing field 'question_content'"):
        adapter("livecodebench").candidates(SourceFiles(tmp_path))


# ---- Code Contests ------------------------------------------------------------------------------------------

def test_code_contests_statement_and_letter_difficulty(sources_dir):
    rows = adapter("code_contests").candidates(SourceFiles(sources_dir))
    source = _jsonl(sources_dir / "code_contests" / "CodeContests_zeroshot_for_test_case_generation.jsonl")
    assert len(rows) == len(source) == 165
    first = rows[0]
    assert first.src_id == "1575_A. Another Sorting Problem" and first.difficulty == "easy"   # A = 7
    assert "asc-desc-endingly" in first.turns[0] and "def solution" not in first.turns[0]
    language = first.sub_category.split("/")[-1]
    assert first.sub_category.startswith("competitive_programming/codeforces/")
    assert f"Write the solution in {LANGUAGE_NAMES[language]}." in first.turns[0]
    by_letter = Counter((r.src_id.split(".")[0].split("_")[1][0], r.difficulty) for r in rows)
    assert all(d == "easy" for (letter, d) in by_letter if letter in "AB")
    assert all(d == "medium" for (letter, d) in by_letter if letter in "CD")
    assert all(d == "hard" for (letter, d) in by_letter if letter >= "E")


def test_code_contests_bad_row_names_file_and_line(tmp_path, sources_dir):
    lines = (sources_dir / "code_contests" / "CodeContests_zeroshot_for_test_case_generation.jsonl").read_text().splitlines()
    broken = json.loads(lines[0])
    broken["prompt"] = "def solution(stdin): pass"
    path = tmp_path / "code_contests" / "CodeContests_zeroshot_for_test_case_generation.jsonl"
    path.parent.mkdir()
    path.write_text(lines[1] + "\n" + json.dumps(broken) + "\n")
    with pytest.raises(SourceError, match=r"generation\.jsonl:2: field 'prompt' has no ''' statement"):
        adapter("code_contests").candidates(SourceFiles(tmp_path))


# ---- HumanEvalPack ------------------------------------------------------------------------------------------

def test_humanevalpack_three_formats_in_six_languages(sources_dir):
    rows = adapter("humanevalpack").candidates(SourceFiles(sources_dir))
    assert len(rows) == 164 * 6 * 3
    formats = Counter(r.sub_category for r in rows)
    assert set(formats.values()) == {164} and len(formats) == 18
    go = _jsonl(sources_dir / "humanevalpack" / "go" / "humanevalpack.jsonl")[0]
    by_id = {r.src_id: r for r in rows}
    assert by_id[f"{go['task_id']}/synthesize"].turns == [go["instruction"]]
    fix = by_id[f"{go['task_id']}/fix"].turns[0]
    assert go["buggy_solution"].rstrip() in fix and go["test"].strip() in fix and go["canonical_solution"] not in fix
    assert go["canonical_solution"].rstrip() in by_id[f"{go['task_id']}/explain"].turns[0]
    assert {r.difficulty for r in rows} == {"easy", "medium"}


def test_humanevalpack_missing_buggy_solution_names_file_and_line(tmp_path, sources_dir):
    for lang in ("python", "js", "java", "go", "cpp", "rust"):
        lines = (sources_dir / "humanevalpack" / lang / "humanevalpack.jsonl").read_text().splitlines()[:2]
        if lang == "java":
            broken = json.loads(lines[1])
            broken["buggy_solution"] = ""
            lines[1] = json.dumps(broken)
        (tmp_path / "humanevalpack" / lang).mkdir(parents=True)
        (tmp_path / "humanevalpack" / lang / "humanevalpack.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SourceError, match=r"java/humanevalpack\.jsonl:2: field 'buggy_solution' must be a non-empty"):
        adapter("humanevalpack").candidates(SourceFiles(tmp_path))


# ---- MMLU-Pro ---------------------------------------------------------------------------------------------

def test_mmlu_pro_categories_map_to_humanities_and_stem(sources_dir):
    module = adapter("mmlu_pro")
    rows = module.candidates(SourceFiles(sources_dir))
    table = pq.read_table(sources_dir / "mmlu_pro" / "test-00000-of-00001.parquet").to_pylist()
    assert len(table) == 12032 and set(module.CATEGORY_MAP) == {r["category"] for r in table}
    questions = sum(len(r.turns) for r in rows)
    assert questions == len(table)                       # every question once, in a row of 1-3 turns
    by_category = Counter(r.category for r in rows)
    assert set(by_category) == {"humanities", "stem"}
    first_law = next(r for r in table if r["category"] == "law")
    row = next(r for r in rows if r.src_id.split("/")[1].split("-")[0] == str(first_law["question_id"]))
    assert row.category == "humanities" and row.sub_category == "Law/law"
    assert first_law["question"].strip() in row.turns[0] and f"J. {first_law['options'][9].strip()}" in row.turns[0]
    assert module.difficulty("stemez-Physics") == "hard" and module.difficulty("ori_mmlu-high_school_physics") == "medium"
    assert module.difficulty("ori_mmlu-elementary_mathematics") == "easy"
    assert any(r.multiturn for r in rows)


def test_mmlu_pro_empty_question_names_file_row_and_column(tmp_path, sources_dir):
    table = pq.read_table(sources_dir / "mmlu_pro" / "test-00000-of-00001.parquet").slice(0, 5)
    questions = table.column("question").to_pylist()
    questions[3] = ""
    broken = table.set_column(table.schema.get_field_index("question"), "question", pa.array(questions))
    path = tmp_path / "mmlu_pro" / "test-00000-of-00001.parquet"
    path.parent.mkdir()
    pq.write_table(broken, path)
    with pytest.raises(SourceError, match=r"test-00000-of-00001\.parquet: row 3: column 'question' is empty"):
        adapter("mmlu_pro").candidates(SourceFiles(tmp_path))
    pq.write_table(table.drop_columns(["src"]), path)
    with pytest.raises(SourceError, match=r"parquet: missing column\(s\) \['src'\]"):
        adapter("mmlu_pro").candidates(SourceFiles(tmp_path))
    path.write_bytes(b"not parquet")
    with pytest.raises(SourceError, match=r"parquet: not a readable parquet file"):
        adapter("mmlu_pro").candidates(SourceFiles(tmp_path))


# ---- wiring: the categories the paper uses them for; difficulty everywhere it is asked for ---------------

def test_new_sources_feed_the_papers_categories(pools, sources_dir):
    per_category = {c: {r.source for r in rows} for c, rows in pools.items()}
    assert {"livecodebench/code_generation_lite", "deepmind/code_contests", "bigcode/humanevalpack"} <= per_category["coding"]
    assert "TIGER-Lab/MMLU-Pro" in per_category["humanities"] and "TIGER-Lab/MMLU-Pro" in per_category["stem"]
    for module in all_adapters():
        if module.__name__.rsplit(".", 1)[1] in ("livecodebench", "code_contests", "humanevalpack", "mmlu_pro"):
            assert {r.category for r in module.candidates(SourceFiles(sources_dir))} == set(module.FEEDS)


def test_every_hard_category_row_has_a_difficulty(pools):
    for category in HARD_CATEGORIES:
        missing = [r.source for r in pools[category] if r.difficulty not in ("easy", "medium", "hard")]
        assert not missing, (category, Counter(missing))
        hard = sum(r.difficulty == "hard" for r in pools[category])
        assert hard >= 64, category          # enough hard candidates for 80% of 80 rows


def test_multilingual_pool_has_four_tasks_and_23_languages(pools):
    rows = pools["multilingual"]
    tasks = Counter(r.sub_category.split("/")[0] for r in rows)
    assert set(tasks) == {"math", "qa", "translation", "summarization"}
    assert len({r.language for r in rows}) >= 23
    summaries = [r for r in rows if r.sub_category.startswith("summarization/")]
    assert summaries and all(r.source == "google/xquad" for r in summaries)
    assert {r.sub_category.endswith("-en") for r in summaries} == {True, False}   # same-language and cross-lingual
