"""Open-domain and retrieval QA sets (mirror: leeyeezeee/benchfortir data/): SimpleQA, 2Wiki, MuSiQue,
Bamboogle (closed-book -> qa) and HotpotQA, SQuAD v2 (with their passages -> rag; stand-ins for ChatRAG-Bench).

SQuAD v2 questions on the same passage become multi-turn rows, the way ChatRAG-Bench converses over a document.
"""
from __future__ import annotations

from itertools import groupby

from speedbench.dataset_builder.sources._read import SourceError, chunk_by_pattern, field, read_jsonl
from speedbench.schema import DatasetRow

SOURCE = "leeyeezeee/benchfortir"
LICENSE = "MIT"
FEEDS = ("qa", "rag")
CLOSED_BOOK = {  # folder -> (source id, license)
    "SimpleQA": ("basicv8vc/SimpleQA", "MIT"),
    "2wiki": ("xanhho/2WikiMultihopQA", "Apache-2.0"),
    "musique": ("dgslibisey/MuSiQue", "CC-BY-4.0"),
    "bamboogle": ("chiayewken/bamboogle", "unspecified"),
}
SQUAD_TURNS = (1, 2, 1, 3)
RAG_INSTRUCTION = "Answer the question using only the documents below.\n\n{documents}\n\nQuestion: {question}"
SQUAD_INSTRUCTION = ("Read the passage and answer my questions about it. If the passage does not contain the "
                     "answer, say so.\n\nPassage ({title}):\n{context}\n\nQuestion: {question}")


def _closed_book(files) -> list[DatasetRow]:
    rows = []
    for folder, (source, license) in CLOSED_BOOK.items():
        path = files.path(f"benchfortir/{folder}/test.jsonl")
        for lineno, obj in read_jsonl(path):
            rows.append(DatasetRow(
                category="qa", sub_category=folder.lower(), turns=[field(obj, "question", path, lineno)],
                source=source, src_id=f"test/{lineno - 1}", license=license))
    return rows


def _hotpotqa(files) -> list[DatasetRow]:
    path = files.path("benchfortir/hotpotqa/test.jsonl")
    rows = []
    for lineno, obj in read_jsonl(path):
        context = field(obj, "context", path, lineno, list)
        try:
            documents = "\n\n".join(f"Document {i}: {title}\n{''.join(sentences).strip()}"
                                    for i, (title, sentences) in enumerate(context, start=1))
        except (TypeError, ValueError):
            raise SourceError(f"{path}:{lineno}: field 'context' must be a list of [title, sentences]") from None
        rows.append(DatasetRow(
            category="rag", sub_category="multi_hop_qa/hotpotqa",
            turns=[RAG_INSTRUCTION.format(documents=documents, question=field(obj, "question", path, lineno))],
            source="hotpotqa/hotpot_qa", src_id=field(obj, "_id", path, lineno), license="CC-BY-SA-4.0"))
    return rows


def _squad(files) -> list[DatasetRow]:
    path = files.path("benchfortir/squadv2/test.jsonl")
    items = [(lineno, obj) for lineno, obj in read_jsonl(path)]
    for lineno, obj in items:
        for name in ("context", "question", "id"):
            field(obj, name, path, lineno)
    rows = []
    for _, same_passage in groupby(items, key=lambda item: item[1]["context"]):
        for group in chunk_by_pattern(list(same_passage), SQUAD_TURNS):
            first = group[0][1]
            turns = [SQUAD_INSTRUCTION.format(title=first.get("title", "").replace("_", " "),
                                              context=first["context"], question=first["question"])]
            turns += [obj["question"] for _, obj in group[1:]]
            rows.append(DatasetRow(
                category="rag", sub_category="reading_comprehension/squad_v2", turns=turns,
                source="rajpurkar/squad_v2", src_id="+".join(obj["id"] for _, obj in group),
                license="CC-BY-SA-4.0"))
    return rows


def candidates(files) -> list[DatasetRow]:
    return _closed_book(files) + _hotpotqa(files) + _squad(files)
