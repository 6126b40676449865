"""Humanity's Last Exam, text-only (cais/hle; mirror: leeyeezeee/benchfortir data/hle/top.json, 500 questions).

Math goes to math, Humanities/Social Science to humanities, the rest (CS/AI, Biology/Medicine,
Physics, Chemistry, Engineering, Other) to stem. All hard.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "cais/hle"
LICENSE = "MIT"
FILE = "benchfortir/hle/top.json"   # one JSON object per line despite the name
FEEDS = ("math", "humanities", "stem")
CATEGORY = {"Math": "math", "Humanities/Social Science": "humanities"}


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    rows = []
    for lineno, obj in read_jsonl(path):
        hle_category = field(obj, "category", path, lineno)
        category = CATEGORY.get(hle_category, "stem")
        subject = str(obj.get("raw_subject") or hle_category)
        rows.append(DatasetRow(
            category=category, sub_category=hle_category if category == "stem" else subject,
            turns=[field(obj, "question", path, lineno)], source=SOURCE, src_id=field(obj, "id", path, lineno),
            difficulty="hard", license=LICENSE))
    return rows
