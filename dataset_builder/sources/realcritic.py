"""RealCritic (tangzhy/RealCritic) test sets: GPQA, ARC-Challenge, MMLU-STEM, OlympiadBench, college and Minerva math.

Only the original questions are used (not the critiques or wrong answers the set adds).
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "tangzhy/RealCritic"
LICENSE = "MIT"
FEEDS = ("stem", "reasoning", "math")
# folder -> (category, sub_category, difficulty, source dataset named in src_id)
SUBSETS = {
    "gpqa": ("stem", "gpqa", "hard"),
    "mmlu_stem": ("stem", "mmlu_stem", "medium"),
    "arc-challenge": ("reasoning", "arc_challenge", ""),
    "olympiadbench": ("math", "olympiadbench", "hard"),
    "college_math": ("math", "college_math", "medium"),
    "minerva_math": ("math", "minerva_math", "hard"),
}
SUFFIX = "\n\nReason step by step and put your final answer within \\boxed{}."


def candidates(files) -> list[DatasetRow]:
    rows = []
    for folder, (category, sub, difficulty) in SUBSETS.items():
        path = files.path(f"realcritic/{folder}/test.jsonl")
        for lineno, obj in read_jsonl(path):
            rows.append(DatasetRow(
                category=category, sub_category=sub, turns=[field(obj, "question", path, lineno) + SUFFIX],
                source=SOURCE, src_id=f"{folder}/{obj.get('idx', lineno)}", difficulty=difficulty,
                license=LICENSE))
    return rows
