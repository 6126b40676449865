"""MMLU-Pro (TIGER-Lab/MMLU-Pro), test split: 12,032 ten-option questions in 14 categories.

Mirror: ``mmlu_pro/test-00000-of-00001.parquet`` (read with pyarrow). The 14 categories map to
the paper's Humanities (Humanities / Social Science) and STEM sub-categories (``CATEGORY_MAP``).
As in the reference, some consecutive questions of one category become one multi-turn row.
Difficulty by a documented mapping of ``src``: questions MMLU-Pro added from STEM problem sets
(``stemez``, ``theoremQA``, ``scibench``) are hard; those kept from MMLU (``ori_mmlu-<subject>``)
follow MMLU's school level (elementary: easy, high school: medium, college / professional /
other: hard).
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, chunk_by_pattern
from speedbench.schema import DatasetRow

SOURCE = "TIGER-Lab/MMLU-Pro"
LICENSE = "MIT"
FEEDS = ("humanities", "stem")
FILE = "mmlu_pro/test-00000-of-00001.parquet"
COLUMNS = ("question_id", "question", "options", "category", "src")
# MMLU-Pro category -> (our category, sub-category)
CATEGORY_MAP = {
    "law": ("humanities", "Law"), "history": ("humanities", "History"),
    "philosophy": ("humanities", "Philosophy"), "psychology": ("humanities", "Psychology"),
    "economics": ("humanities", "Economics"), "business": ("humanities", "Business"),
    "other": ("humanities", "Other"),
    "math": ("stem", "Math"), "physics": ("stem", "Physics"), "chemistry": ("stem", "Chemistry"),
    "engineering": ("stem", "Engineering"), "biology": ("stem", "Biology/Medicine"),
    "health": ("stem", "Biology/Medicine"), "computer science": ("stem", "CS/AI"),
}
TURN_GROUPS = (1, 1, 1, 1, 1, 1, 1, 2, 3)   # about one row in five is multi-turn
FIRST = ("The following is a multiple choice question about {subject}. Think it through step by step, "
         "then give the letter of the correct answer.\n\n{question}")
NEXT = "Another question about {subject}:\n\n{question}"
LETTERS = "ABCDEFGHIJ"


def difficulty(src: str) -> str:
    origin, _, subject = src.partition("-")
    if origin != "ori_mmlu":
        return "hard"
    if subject.startswith("elementary"):
        return "easy"
    return "medium" if subject.startswith("high_school") else "hard"


def read_questions(path) -> list[dict]:
    """The parquet rows as dicts; a missing column or an empty value raises naming file, row and column."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise SourceError(f"{path}: source file not found")
    try:
        table = pq.read_table(path)
    except Exception as error:   # pyarrow raises several types for a corrupt file
        raise SourceError(f"{path}: not a readable parquet file ({error})") from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise SourceError(f"{path}: missing column(s) {missing}")
    rows = table.select(list(COLUMNS)).to_pylist()
    for index, row in enumerate(rows):
        for column in COLUMNS:
            value = row[column]
            if value is None or (isinstance(value, (str, list)) and not value):
                raise SourceError(f"{path}: row {index}: column {column!r} is empty")
        if row["category"] not in CATEGORY_MAP:
            raise SourceError(f"{path}: row {index}: unknown MMLU-Pro category {row['category']!r}")
        if len(row["options"]) > len(LETTERS):
            raise SourceError(f"{path}: row {index}: {len(row['options'])} options, at most {len(LETTERS)} expected")
    return rows


def _format(row: dict) -> str:
    return row["question"].strip() + "\n" + "\n".join(
        f"{letter}. {str(option).strip()}" for letter, option in zip(LETTERS, row["options"]))


def candidates(files) -> list[DatasetRow]:
    rows = read_questions(files.path(FILE))
    by_category: dict[str, list[dict]] = {}
    for row in rows:
        by_category.setdefault(row["category"], []).append(row)
    out = []
    for mmlu_category in sorted(by_category):
        category, sub = CATEGORY_MAP[mmlu_category]
        for group in chunk_by_pattern(by_category[mmlu_category], TURN_GROUPS):
            turns = [(FIRST if i == 0 else NEXT).format(subject=mmlu_category, question=_format(row))
                     for i, row in enumerate(group)]
            ids = [str(row["question_id"]) for row in group]
            hardest = "hard" if any(difficulty(r["src"]) == "hard" for r in group) else difficulty(group[0]["src"])
            out.append(DatasetRow(
                category=category, sub_category=f"{sub}/{mmlu_category}", turns=turns, source=SOURCE,
                src_id=f"test/{ids[0]}" + (f"-{ids[-1]}" if len(ids) > 1 else ""), difficulty=hardest,
                license=LICENSE))
    return out
