"""WritingBench (X-PLUG/WritingBench; mirror: length, format and style subsets, 721 unique queries).

About 40% of the queries are Chinese; a query that appears in several subsets is kept once.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, guess_language, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "X-PLUG/WritingBench"
LICENSE = "Apache-2.0"
FEEDS = ("writing",)
SUBSETS = ("length", "format", "style")


def candidates(files) -> list[DatasetRow]:
    rows, seen = [], set()
    for subset in SUBSETS:
        path = files.path(f"writingbench/{subset}_subset.jsonl")
        for lineno, obj in read_jsonl(path):
            query = field(obj, "query", path, lineno).strip()
            if query in seen:
                continue
            seen.add(query)
            domain = f"{obj.get('domain1', '')}/{obj.get('domain2', '')}".strip("/")
            rows.append(DatasetRow(
                category="writing", sub_category=f"writingbench/{domain}", turns=[query], source=SOURCE,
                src_id=f"{subset}_subset/{obj.get('index', lineno)}", language=guess_language(query),
                license=LICENSE))
    return rows
