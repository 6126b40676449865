"""XQuAD (google/xquad): 240 SQuAD paragraphs with questions, professionally translated into 11 languages.

Non-English paragraphs feed multilingual (reading-comprehension QA in that language); English ones
feed rag. Up to three questions on one paragraph form one (multi-turn) row. Each non-English
paragraph is also offered once as a summarization request (multilingual summarization, as MCIF has
it): every other paragraph asks for the summary in the passage's language, the others in English
(cross-lingual).
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, read_json
from speedbench.dataset_builder.sources.languages import NAMES_BY_ISO1
from speedbench.schema import DatasetRow

SOURCE = "google/xquad"
LICENSE = "CC-BY-SA-4.0"
FEEDS = ("multilingual", "rag")
QUESTION_GROUPS = (1, 2, 1, 1, 3)
INSTRUCTION = ("Read the passage and answer the question in {language}.\n\nPassage:\n{context}\n\n"
               "Question: {question}")
SUMMARY = "Summarize the following {source} passage in {target}, in two or three sentences.\n\n{context}"


def candidates(files) -> list[DatasetRow]:
    rows = []
    for path in files.glob("xquad/xquad.*.json"):
        lang = path.name.split(".")[1]
        data = read_json(path)
        articles = data.get("data") if isinstance(data, dict) else None
        if not isinstance(articles, list):
            raise SourceError(f"{path}: expected an object with a 'data' list")
        counter = 0
        for a, article in enumerate(articles):
            for p, paragraph in enumerate(article.get("paragraphs", [])):
                qas = paragraph.get("qas") or []
                if not paragraph.get("context") or not qas:
                    raise SourceError(f"{path}: data[{a}].paragraphs[{p}] has no context or no questions")
                group = qas[:QUESTION_GROUPS[counter % len(QUESTION_GROUPS)]]
                counter += 1
                turns = [INSTRUCTION.format(language=NAMES_BY_ISO1.get(lang, lang), context=paragraph["context"],
                                            question=group[0]["question"])]
                turns += [qa["question"] for qa in group[1:]]
                rows.append(DatasetRow(
                    category="rag" if lang == "en" else "multilingual",
                    sub_category="reading_comprehension/xquad" if lang == "en" else f"qa/{lang}",
                    turns=turns, source=SOURCE, src_id=f"xquad.{lang}/" + "+".join(qa["id"] for qa in group),
                    language=lang, license=LICENSE))
                if lang != "en":
                    rows.append(_summary_row(lang, a, p, paragraph["context"], counter))
    return rows


def _summary_row(lang: str, article: int, paragraph: int, context: str, counter: int) -> DatasetRow:
    name = NAMES_BY_ISO1.get(lang, lang)
    cross = counter % 2 == 1
    return DatasetRow(
        category="multilingual", sub_category=f"summarization/{lang}" + ("-en" if cross else ""),
        turns=[SUMMARY.format(source=name, target="English" if cross else name, context=context)],
        source=SOURCE, src_id=f"xquad.{lang}/summary/{article}-{paragraph}", language=lang, license=LICENSE)
