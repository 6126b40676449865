"""GSM8K (openai/gsm8k; mirror: openai/grade-school-math test.jsonl): grade-school word problems."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "openai/gsm8k"
LICENSE = "MIT"
FILE = "gsm8k/test.jsonl"
FEEDS = ("math",)


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    return [DatasetRow(category="math", sub_category="grade_school_word_problem",
                       turns=[field(obj, "question", path, lineno)], source=SOURCE, src_id=f"test/{lineno - 1}",
                       difficulty="easy", license=LICENSE)
            for lineno, obj in read_jsonl(path)]
