"""QAGS articles (W4ngatang/qags): 235 CNN/DailyMail and 239 XSum news articles to summarize.

Stands in for abisee/cnn_dailymail (the reference source). The mirror's articles have proper nouns
lower-cased, as QAGS ships them.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import field, read_jsonl, stable_choice
from speedbench.schema import DatasetRow

SOURCE = "W4ngatang/qags"
LICENSE = "unspecified (news articles from CNN/DailyMail and XSum)"
FEEDS = ("summarization",)
SUBSETS = {"cnndm": "news/cnn_dailymail", "xsum": "news/xsum"}
INSTRUCTIONS = (
    "Summarize the following news article in three to five sentences.\n\n{article}",
    "Write a short summary of this article for someone who has not read it.\n\nArticle:\n{article}",
    "Give a one-paragraph summary of the key facts in the article below.\n\n{article}",
    "Read the article and write a concise summary with the main points as bullet points.\n\n{article}",
)


def candidates(files) -> list[DatasetRow]:
    rows = []
    for subset, sub_category in SUBSETS.items():
        path = files.path(f"summarization/qags/mturk_{subset}.jsonl")
        for lineno, obj in read_jsonl(path):
            src_id = f"mturk_{subset}/{lineno - 1}"
            article = field(obj, "article", path, lineno).strip()
            rows.append(DatasetRow(
                category="summarization", sub_category=sub_category,
                turns=[stable_choice(INSTRUCTIONS, src_id).format(article=article)], source=SOURCE,
                src_id=src_id, license=LICENSE))
    return rows
