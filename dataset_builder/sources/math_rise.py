"""MATH test problems (hendrycks/competition_math; mirror: cmu-mind/RISE math_test_1000.jsonl)."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "hendrycks/competition_math"
LICENSE = "MIT"
FILE = "math_rise/math_test_1000.jsonl"
FEEDS = ("math",)


def level_difficulty(level: str) -> str:
    digits = "".join(ch for ch in str(level) if ch.isdigit())
    number = int(digits) if digits else 3
    return "easy" if number <= 2 else ("medium" if number == 3 else "hard")


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    rows = []
    for lineno, obj in read_jsonl(path):
        rows.append(DatasetRow(
            category="math", sub_category=f"competition/{obj.get('type', 'unknown')}",
            turns=[field(obj, "problem", path, lineno)], source=SOURCE, src_id=f"rise_test_1000/{lineno - 1}",
            difficulty=level_difficulty(obj.get("level", "")), license=LICENSE))
    return rows
