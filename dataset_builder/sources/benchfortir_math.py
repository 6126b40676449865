"""MATH-500 and AIME 2024 (mirror: leeyeezeee/benchfortir data/math, data/aime24)."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.dataset_builder.sources.math_rise import level_difficulty
from speedbench.schema import DatasetRow

SOURCE_MATH500 = "HuggingFaceH4/MATH-500"
SOURCE_AIME = "HuggingFaceH4/aime_2024"
SOURCE = SOURCE_MATH500
LICENSE = "MIT"
FEEDS = ("math",)


def candidates(files) -> list[DatasetRow]:
    rows = []
    path = files.path("benchfortir/math/test.jsonl")
    for lineno, obj in read_jsonl(path):
        rows.append(DatasetRow(
            category="math", sub_category=f"competition/{obj.get('subject', 'unknown')}",
            turns=[field(obj, "problem", path, lineno)], source=SOURCE_MATH500, src_id=f"test/{lineno - 1}",
            difficulty=level_difficulty(obj.get("level", "")), license=LICENSE))
    path = files.path("benchfortir/aime24/test.jsonl")
    for lineno, obj in read_jsonl(path):
        rows.append(DatasetRow(
            category="math", sub_category="competition/aime", turns=[field(obj, "problem", path, lineno)],
            source=SOURCE_AIME, src_id=str(obj.get("id", lineno)), difficulty="hard", license="MIT"))
    return rows
