"""MBPP sanitized (google-research-datasets/mbpp, 427 tasks): short Python programming problems with tests."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "google-research-datasets/mbpp"
LICENSE = "CC-BY-4.0"
FILE = "mbpp/mbpp_sanitized_427.jsonl"
FEEDS = ("coding",)


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    rows = []
    for lineno, obj in read_jsonl(path):
        tests = "\n".join(field(obj, "test_list", path, lineno, list))
        prompt = (f"{field(obj, 'text', path, lineno)}\nWrite it in Python. Your code should pass these "
                  f"tests:\n\n```python\n{tests}\n```")
        rows.append(DatasetRow(
            category="coding", sub_category="function_generation/python", turns=[prompt], source=SOURCE,
            src_id=f"sanitized/{obj.get('task_id', lineno)}", difficulty="easy", license=LICENSE))
    return rows
