"""Code Contests (deepmind/code_contests) test split, as CodeT reformatted it (microsoft/CodeT).

Mirror: ``code_contests/CodeContests_zeroshot_for_test_case_generation.jsonl``, 165 Codeforces
problems. The statement is the ``'''`` docstring of CodeT's prompt (Input/Output sections kept,
examples cut by CodeT); the stub and assertion CodeT appends are dropped, and the prompt asks for
the solution in one of six programming languages (``_programming.py``). Difficulty is CodeContests'
own ``difficulty`` enum, which for Codeforces is the problem letter (7 = A, 8 = B, ...): A-B easy,
C-D medium, E and later hard.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._programming import STDIN, solution_language
from speedbench.dataset_builder.sources._read import SourceError, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "deepmind/code_contests"
LICENSE = "CC-BY-4.0"
FEEDS = ("coding",)
FILE = "code_contests/CodeContests_zeroshot_for_test_case_generation.jsonl"
INSTRUCTION = "Solve the following competitive programming problem. {stdin}\n\n{statement}"
LETTER_A = 7   # CodeContests' Difficulty enum: A = 7, B = 8, ...


def difficulty(level: int) -> str:
    return "easy" if level <= LETTER_A + 1 else "medium" if level <= LETTER_A + 3 else "hard"


def statement(text: str, path, lineno: int) -> str:
    parts = text.split("'''")
    if len(parts) < 3 or not parts[1].strip():
        raise SourceError(f"{path}:{lineno}: field 'prompt' has no ''' statement ''' block")
    return parts[1].strip()


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    rows = []
    for lineno, obj in read_jsonl(path):
        meta = field(obj, "meta_data", path, lineno, dict)
        level = field(meta, "difficulty", path, lineno, int)
        if level < LETTER_A:
            raise SourceError(f"{path}:{lineno}: meta_data.difficulty {level} is not a Codeforces problem letter (>= 7)")
        name = field(meta, "task_name", path, lineno)
        fence, language = solution_language(f"code_contests/{name}")
        text = INSTRUCTION.format(stdin=STDIN.format(name=language),
                                  statement=statement(field(obj, "prompt", path, lineno), path, lineno))
        rows.append(DatasetRow(
            category="coding", sub_category=f"competitive_programming/codeforces/{fence}", turns=[text],
            source=SOURCE, src_id=name, difficulty=difficulty(level), license=LICENSE))
    return rows
