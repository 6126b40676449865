"""Spec-Bench (hemingkx/Spec-Bench, data/spec_bench/question.jsonl): MT-Bench plus five task sets.

Feeds several categories and is also the comparison set of the diversity report.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "hemingkx/Spec-Bench"
LICENSE = "Apache-2.0"
FILE = "specbench/question.jsonl"
FEEDS = ("writing", "roleplay", "reasoning", "math", "coding", "rag", "stem", "humanities",
         "multilingual", "summarization", "qa")
# Spec-Bench category -> ours (Extraction and RAG merge; Translation becomes Multilingual).
CATEGORY_MAP = {
    "writing": "writing", "roleplay": "roleplay", "reasoning": "reasoning", "math": "math",
    "coding": "coding", "extraction": "rag", "stem": "stem", "humanities": "humanities",
    "translation": "multilingual", "summarization": "summarization", "qa": "qa",
    "math_reasoning": "math", "rag": "rag",
}
EASY_DIFFICULTY = ("coding", "humanities", "math", "stem")


def read_rows(path) -> list[tuple[str, DatasetRow]]:
    """(Spec-Bench category, row) for every question in the file."""
    out = []
    for lineno, obj in read_jsonl(path):
        spec_category = field(obj, "category", path, lineno)
        if spec_category not in CATEGORY_MAP:
            raise SourceError(f"{path}:{lineno}: unknown Spec-Bench category {spec_category!r}")
        turns = field(obj, "turns", path, lineno, list)
        category = CATEGORY_MAP[spec_category]
        out.append((spec_category, DatasetRow(
            category=category, sub_category=f"spec_bench/{spec_category}", turns=[str(t) for t in turns],
            source=SOURCE, src_id=str(obj.get("question_id", lineno)),
            difficulty="easy" if category in EASY_DIFFICULTY else "",
            language="de" if spec_category == "translation" else "en", license=LICENSE)))
    return out


def candidates(files) -> list[DatasetRow]:
    return [row for _, row in read_rows(files.path(FILE))]
