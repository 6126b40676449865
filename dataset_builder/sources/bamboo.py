"""BAMBOO (RUCAIBox/BAMBOO) MeetingQA 4k: multiple-choice questions over ~4k-token meeting transcripts (rag).

The prompt is BAMBOO's own instruction from ``prompt.json``.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources import HubFile
from speedbench.dataset_builder.sources._read import SourceError, field, read_json, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "RUCAIBox/BAMBOO"
LICENSE = "MIT"
FEEDS = ("rag",)
FILE = "bamboo/meetingqa_4k.jsonl"
HUB = HubFile(SOURCE, {FILE: "datasets/meetingqa_4k.jsonl", "bamboo/prompt.json": "prompt.json"})


def candidates(files) -> list[DatasetRow]:
    prompt_path = files.path("bamboo/prompt.json", HUB)
    prompts = read_json(prompt_path)
    try:
        template = prompts["meetingqa"]["final_answer"]
    except (KeyError, TypeError):
        raise SourceError(f"{prompt_path}: no 'meetingqa'.'final_answer' instruction") from None
    path = files.path(FILE, HUB)
    rows = []
    for lineno, obj in read_jsonl(path):
        options = "\n".join(field(obj, "options", path, lineno, list))
        prompt = (template.replace("{content}", field(obj, "content", path, lineno).strip())
                  .replace("{question}", field(obj, "question", path, lineno)).replace("{options}", options))
        rows.append(DatasetRow(
            category="rag", sub_category="long_meeting_qa/bamboo", turns=[prompt], source=SOURCE,
            src_id=f"meetingqa_4k/{lineno - 1}", license=LICENSE))
    return rows
