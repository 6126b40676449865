"""HumanEvalPack (bigcode/humanevalpack): the 164 HumanEval tasks in 6 languages and 3 task formats.

Mirror: ``humanevalpack/<lang>/humanevalpack.jsonl``. Formats, as the pack defines them:
synthesize (its natural-language ``instruction``), fix (the ``buggy_solution`` after the
declaration, with the tests, asked to be repaired) and explain (the ``canonical_solution`` after the
declaration, asked to be explained). Difficulty: HumanEval-level function tasks are ``easy`` for
synthesis and explanation and ``medium`` for repair (the bug must be found first); the pack has no labels.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "bigcode/humanevalpack"
LICENSE = "MIT"
FEEDS = ("coding",)
LANGUAGES = {"python": ("Python", "python"), "js": ("JavaScript", "javascript"), "java": ("Java", "java"),
             "go": ("Go", "go"), "cpp": ("C++", "cpp"), "rust": ("Rust", "rust")}
FORMATS = ("synthesize", "fix", "explain")
DIFFICULTY = {"synthesize": "easy", "fix": "medium", "explain": "easy"}
FIX = ("Fix bugs in the following {name} function `{entry}`.\n\n```{fence}\n{code}\n```\n\n"
       "It must pass these tests:\n\n```{fence}\n{tests}\n```")
EXPLAIN = ("Explain in detail what the following {name} code does and how it works, without rewriting it.\n\n"
           "```{fence}\n{code}\n```")


def _turn(kind: str, obj: dict, path, lineno: int, name: str, fence: str) -> str:
    if kind == "synthesize":
        return field(obj, "instruction", path, lineno)
    declaration = field(obj, "declaration", path, lineno)
    entry = field(obj, "entry_point", path, lineno)
    if kind == "fix":
        code = declaration + field(obj, "buggy_solution", path, lineno)
        return FIX.format(name=name, entry=entry, fence=fence, code=code.rstrip(),
                          tests=field(obj, "test", path, lineno).strip())
    code = declaration + field(obj, "canonical_solution", path, lineno)
    return EXPLAIN.format(name=name, fence=fence, code=code.rstrip())


def candidates(files) -> list[DatasetRow]:
    rows = []
    for lang, (name, fence) in LANGUAGES.items():
        path = files.path(f"humanevalpack/{lang}/humanevalpack.jsonl")
        for lineno, obj in read_jsonl(path):
            task_id = field(obj, "task_id", path, lineno)
            for kind in FORMATS:
                rows.append(DatasetRow(
                    category="coding", sub_category=f"{kind}/{fence}", turns=[_turn(kind, obj, path, lineno, name, fence)],
                    source=SOURCE, src_id=f"{task_id}/{kind}", difficulty=DIFFICULTY[kind], license=LICENSE))
    return rows
