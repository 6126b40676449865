"""HumanEval-X (THUDM/CodeGeeX; stands in for HumanEvalPack): the HumanEval tasks in C++, Go, Java, JavaScript, Rust.

The Python variant is skipped: it duplicates HumanEval itself.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "THUDM/humaneval-x"
LICENSE = "Apache-2.0"
FEEDS = ("coding",)
LANGUAGES = {"cpp": ("C++", "cpp"), "go": ("Go", "go"), "java": ("Java", "java"),
             "js": ("JavaScript", "javascript"), "rust": ("Rust", "rust")}
INSTRUCTION = "Complete the following {name} code so that it implements what the comment describes.\n\n```{fence}\n{code}```"


def candidates(files) -> list[DatasetRow]:
    rows = []
    for lang, (name, fence) in LANGUAGES.items():
        path = files.path(f"humaneval_x/humaneval_{lang}.jsonl.gz")
        for lineno, obj in read_jsonl(path):
            rows.append(DatasetRow(
                category="coding", sub_category=f"code_completion/{fence}",
                turns=[INSTRUCTION.format(name=name, fence=fence, code=field(obj, "prompt", path, lineno))],
                source=SOURCE, src_id=field(obj, "task_id", path, lineno), difficulty="medium",
                license=LICENSE))
    return rows
