"""QMSum (Yale-LILY/QMSum): query-focused meeting summarization.

Each specific query comes with the transcript span it is about; that span (not the whole meeting,
which is tens of thousands of tokens) is the document. Spans longer than ``MAX_CHARS`` are skipped.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "Yale-LILY/QMSum"
LICENSE = "MIT"
FEEDS = ("summarization",)
MAX_CHARS = 12000
INSTRUCTION = "Here is part of a meeting transcript.\n\n{transcript}\n\n{query}"


def candidates(files) -> list[DatasetRow]:
    rows = []
    for split in ("test", "val"):
        path = files.path(f"summarization/qmsum/{split}.jsonl")
        for lineno, meeting in read_jsonl(path):
            transcript = field(meeting, "meeting_transcripts", path, lineno, list)
            for q, query in enumerate(meeting.get("specific_query_list", [])):
                try:
                    spans = [(int(a), int(b)) for a, b in query["relevant_text_span"]]
                    text = "\n".join(f"{turn['speaker']}: {turn['content']}"
                                     for a, b in spans for turn in transcript[a:b + 1])
                except (KeyError, TypeError, ValueError):
                    raise SourceError(f"{path}:{lineno}: specific_query_list[{q}] has no usable "
                                      f"relevant_text_span / transcript turns") from None
                if not text or len(text) > MAX_CHARS:
                    continue
                rows.append(DatasetRow(
                    category="summarization", sub_category="meeting/query_focused",
                    turns=[INSTRUCTION.format(transcript=text, query=query["query"])], source=SOURCE,
                    src_id=f"{split}/{lineno - 1}/specific/{q}", license=LICENSE))
    return rows
