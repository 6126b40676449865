"""MMLU (cais/mmlu; mirror: hendrycks/test CSVs; stands in for MMLU-Pro): humanities and STEM questions.

As in the reference (MMLU-Pro), some consecutive questions of one subject become one multi-turn row.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import chunk_by_pattern, read_csv_rows
from speedbench.schema import DatasetRow

SOURCE = "cais/mmlu"
LICENSE = "MIT"
FEEDS = ("humanities", "stem")
HUMANITIES = (
    "formal_logic", "high_school_european_history", "high_school_us_history", "high_school_world_history",
    "international_law", "jurisprudence", "logical_fallacies", "moral_disputes", "moral_scenarios",
    "philosophy", "prehistory", "professional_law", "world_religions",
    # social sciences (the card's "Humanities/Social Science")
    "econometrics", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_microeconomics", "high_school_psychology",
    "human_sexuality", "professional_psychology", "public_relations", "security_studies", "sociology",
    "us_foreign_policy",
)
STEM = {  # subject -> sub-category group used by the published card for STEM
    "abstract_algebra": "Math", "college_mathematics": "Math", "elementary_mathematics": "Math",
    "high_school_mathematics": "Math", "high_school_statistics": "Math",
    "astronomy": "Physics", "college_physics": "Physics", "conceptual_physics": "Physics",
    "high_school_physics": "Physics",
    "college_chemistry": "Chemistry", "high_school_chemistry": "Chemistry",
    "college_biology": "Biology/Medicine", "high_school_biology": "Biology/Medicine",
    "anatomy": "Biology/Medicine",
    "college_computer_science": "CS/AI", "high_school_computer_science": "CS/AI",
    "computer_security": "CS/AI", "machine_learning": "CS/AI",
    "electrical_engineering": "Engineering",
}
TURN_GROUPS = (1, 1, 1, 1, 1, 1, 1, 2, 3)   # about one row in five is multi-turn
FIRST = ("The following is a multiple choice question about {subject}. Think it through step by step, "
         "then give the letter of the correct answer.\n\n{question}")
NEXT = "Another question about {subject}:\n\n{question}"


def difficulty(subject: str) -> str:
    if subject.startswith("elementary"):
        return "easy"
    return "medium" if subject.startswith("high_school") else "hard"


def _format(fields: list[str]) -> str:
    question, *options, _answer = fields
    return question.strip() + "\n" + "\n".join(f"{letter}. {text.strip()}" for letter, text in zip("ABCD", options))


def candidates(files) -> list[DatasetRow]:
    rows = []
    for subject in sorted(HUMANITIES) + sorted(STEM):
        path = files.path(f"mmlu/{subject}_test.csv")
        items = list(read_csv_rows(path, width=6))
        category = "humanities" if subject in HUMANITIES else "stem"
        readable = subject.replace("_", " ")
        for group in chunk_by_pattern(items, TURN_GROUPS):
            turns = [(FIRST if i == 0 else NEXT).format(subject=readable, question=_format(fields))
                     for i, (_, fields) in enumerate(group)]
            first, last = group[0][0], group[-1][0]
            rows.append(DatasetRow(
                category=category, sub_category=subject if category == "humanities" else f"{STEM[subject]}/{subject}",
                turns=turns, source=SOURCE, src_id=f"{subject}/test/{first}" + (f"-{last}" if last != first else ""),
                difficulty=difficulty(subject), license=LICENSE))
    return rows
