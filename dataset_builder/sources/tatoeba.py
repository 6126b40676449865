"""Tatoeba test pairs (facebookresearch/LASER data/tatoeba/v1): short sentences in many languages with English.

Three consecutive pairs make one translation request; the direction alternates (into / out of English).
Only languages with a known ISO 639-1 code are used.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, read_lines
from speedbench.dataset_builder.sources.languages import LANGUAGES
from speedbench.schema import DatasetRow

SOURCE = "facebookresearch/LASER/tatoeba"
LICENSE = "CC-BY-2.0-FR"
FEEDS = ("multilingual",)
SENTENCES_PER_ROW = 3
ROWS_PER_LANGUAGE = 25
INSTRUCTION = "Translate these {src} sentences into {tgt}, one per line.\n\n{text}"


def candidates(files) -> list[DatasetRow]:
    rows = []
    for path in files.glob("laser_tatoeba/tatoeba.*-eng.eng"):
        iso3 = path.name.split(".")[1].split("-")[0]
        if iso3 not in LANGUAGES or iso3 == "eng":
            continue
        iso1, name = LANGUAGES[iso3]
        foreign_path = path.with_name(f"tatoeba.{iso3}-eng.{iso3}")
        files.path(str(foreign_path.relative_to(files.root)))
        english, foreign = read_lines(path), read_lines(foreign_path)
        if len(english) != len(foreign):
            raise SourceError(f"{foreign_path}: {len(foreign)} lines but {path.name} has {len(english)}")
        step = max(SENTENCES_PER_ROW, len(english) // ROWS_PER_LANGUAGE)
        for n, start in enumerate(range(0, len(english) - SENTENCES_PER_ROW + 1, step)):
            into_english = n % 2 == 0
            lines = (foreign if into_english else english)[start:start + SENTENCES_PER_ROW]
            if not all(line.strip() for line in lines):
                continue
            src, tgt = (name, "English") if into_english else ("English", name)
            rows.append(DatasetRow(
                category="multilingual", sub_category=f"translation/{iso3}-eng" if into_english else f"translation/eng-{iso3}",
                turns=[INSTRUCTION.format(src=src, tgt=tgt, text="\n".join(lines))], source=SOURCE,
                src_id=f"{iso3}-eng/{start}-{start + SENTENCES_PER_ROW - 1}/{'to_eng' if into_english else 'from_eng'}",
                language=iso1, license=LICENSE))
    return rows
