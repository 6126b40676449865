"""MT-Bench-101 (mtbench101/mt-bench-101): 1388 multi-turn dialogues over 13 dialogue skills.

Only the user messages become turns (the model answers each turn itself).
"""
from __future__ import annotations

from speedbench.dataset_builder.sources import HubFile
from speedbench.dataset_builder.sources._read import SourceError, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "mtbench101/mt-bench-101"
LICENSE = "Apache-2.0"
FILE = "mtbench101/mtbench101.jsonl"
# Path inside the Hub repo not verified offline; pass --hub-revisions to pin the commit.
HUB = HubFile(SOURCE, {FILE: "mtbench101.jsonl"})
FEEDS = ("qa", "reasoning", "math")
TASK_CATEGORY = {"GR": "reasoning", "MR": "math"}   # every other skill is conversational QA
TASK_NAMES = {
    "CM": "context_memory", "SI": "separate_input", "AR": "anaphora_resolution", "TS": "topic_shift",
    "CC": "content_confusion", "CR": "content_rephrasing", "FR": "format_rephrasing",
    "SC": "self_correction", "SA": "self_affirmation", "MR": "mathematical_reasoning",
    "GR": "general_reasoning", "IC": "instruction_clarification", "PI": "proactive_interaction",
}


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE, HUB)
    rows = []
    for lineno, obj in read_jsonl(path):
        task = field(obj, "task", path, lineno)
        if task not in TASK_NAMES:
            raise SourceError(f"{path}:{lineno}: unknown MT-Bench-101 task {task!r}")
        history = field(obj, "history", path, lineno, list)
        turns = [str(turn.get("user", "")).strip() for turn in history if isinstance(turn, dict)]
        if len(turns) != len(history) or not all(turns):
            raise SourceError(f"{path}:{lineno}: every history entry needs a non-empty 'user' message")
        category = TASK_CATEGORY.get(task, "qa")
        rows.append(DatasetRow(
            category=category, sub_category=f"mt_bench_101/{TASK_NAMES[task]}", turns=turns, source=SOURCE,
            src_id=f"{task}-{obj.get('id', lineno)}", difficulty="medium" if category == "math" else "",
            license=LICENSE))
    return rows
