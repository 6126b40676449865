"""LiveCodeBench (livecodebench/code_generation_lite): competitive programming from AtCoder and LeetCode.

Mirror: ``livecodebench/problems.jsonl`` (342 problems of release_v5/v6 with every original field,
including ``platform`` and LiveCodeBench's own ``difficulty``) and ``livecodebench_v5.jsonl`` (279
problems as the Qwen team's eval prompts: ``Question: {question_content}`` then the starter code or
the stdin instruction; no platform or difficulty). The prompt is the reference's: question_content
plus the starter code; a stdin problem instead asks for its solution in one of six programming
languages (``_programming.py``). Problems only in the second file get their difficulty by a documented mapping
where one exists (AtCoder Beginner Contest letter: A-B easy, C-D medium, E and later hard; AtCoder
Regular/Grand Contest: hard; it agrees with LiveCodeBench's label on 200 of the 217 labelled AtCoder
problems); LeetCode problems without a label are left out, so every row keeps a
difficulty.
"""
from __future__ import annotations

import re

from speedbench.dataset_builder.sources._programming import STDIN, solution_language
from speedbench.dataset_builder.sources._read import SourceError, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "livecodebench/code_generation_lite"
LICENSE = "cc"                      # as stated on the LiveCodeBench card
FEEDS = ("coding",)
PROBLEMS = "livecodebench/problems.jsonl"
QWEN_PROMPTS = "livecodebench/livecodebench_v5.jsonl"
DIFFICULTIES = ("easy", "medium", "hard")
STARTER = "Use the following starter code:\n```python\n{code}\n```"
# LiveCodeBench's template: "Question: {question_content}\n\n" then the stdin instruction or the starter code.
_QUESTION = re.compile(r"Question: (.*?)\n\n(?:Read the inputs from stdin|You will use the following starter code)", re.S)
_ATCODER_ID = re.compile(r"^(abc|arc|agc)\d+_([a-z])\d*$")


def atcoder_difficulty(question_id: str) -> str:
    """The documented mapping for AtCoder problems without LiveCodeBench's label ('' when none applies)."""
    match = _ATCODER_ID.match(question_id)
    if not match:
        return ""
    contest, letter = match.groups()
    if contest != "abc":
        return "hard"
    return "easy" if letter in "ab" else "medium" if letter in "cd" else "hard"


def prompt(question: str, starter_code: str, language: str) -> str:
    tail = STARTER.format(code=starter_code.rstrip()) if starter_code.strip() else STDIN.format(name=language)
    return f"{question.strip()}\n\n{tail}"


def _row(question_id: str, platform: str, difficulty: str, question: str, starter_code: str) -> DatasetRow:
    """Starter code is Python (LeetCode); a stdin problem asks for a language chosen from its id."""
    fence, name = ("python", "Python") if starter_code.strip() else solution_language(f"livecodebench/{question_id}")
    return DatasetRow(category="coding", sub_category=f"competitive_programming/{platform}/{fence}",
                      turns=[prompt(question, starter_code, name)], source=SOURCE, src_id=question_id,
                      difficulty=difficulty, license=LICENSE)


def candidates(files) -> list[DatasetRow]:
    path = files.path(PROBLEMS)
    rows, seen = [], set()
    for lineno, obj in read_jsonl(path):
        question_id = field(obj, "question_id", path, lineno)
        difficulty = field(obj, "difficulty", path, lineno)
        if difficulty not in DIFFICULTIES:
            raise SourceError(f"{path}:{lineno}: field 'difficulty' is {difficulty!r}, expected one of {DIFFICULTIES}")
        starter = obj.get("starter_code") or ""
        if not isinstance(starter, str):
            raise SourceError(f"{path}:{lineno}: field 'starter_code' must be a string")
        rows.append(_row(question_id, field(obj, "platform", path, lineno), difficulty,
                         field(obj, "question_content", path, lineno), starter))
        seen.add(question_id)
    path = files.path(QWEN_PROMPTS)
    for lineno, obj in read_jsonl(path):
        question_id = field(obj, "question_id", path, lineno)
        if question_id in seen:
            continue
        text = field(obj, "prompt", path, lineno)
        question = _QUESTION.search(text)
        if question is None:
            raise SourceError(f"{path}:{lineno}: field 'prompt' has no 'Question: ...' section in LiveCodeBench's template")
        difficulty = atcoder_difficulty(question_id)
        if not difficulty:        # LeetCode: no label in this file and no mapping
            continue
        # AtCoder problems read standard input: no starter code.
        rows.append(_row(question_id, "atcoder", difficulty, question.group(1), ""))
        seen.add(question_id)
    return rows
