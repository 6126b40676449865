"""FLORES-200 devtest (facebook/flores; mirror: Helsinki-NLP/OPUS-MT-testsets; stands in for OPUS-100).

The 38 languages are sentence-parallel, so any pair can be asked: each two-sentence passage is
offered twice, with language pairs spread deterministically over the grid (half into or out of
English, half between two non-English languages).
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, read_lines
from speedbench.dataset_builder.sources.languages import LANGUAGES
from speedbench.schema import DatasetRow

SOURCE = "facebook/flores"
LICENSE = "CC-BY-SA-4.0"
FEEDS = ("multilingual",)
PASSAGE_SENTENCES = 2
INSTRUCTION = "Translate the following {src} text into {tgt}.\n\n{text}"


def _name(code: str) -> tuple[str, str]:
    iso3 = code.split("_")[0]
    iso1, name = LANGUAGES.get(iso3, (iso3, iso3))
    if code == "zho_Hant":
        name = "Traditional Chinese"
    elif code == "zho_Hans":
        name = "Simplified Chinese"
    return iso1, name


def candidates(files) -> list[DatasetRow]:
    paths = files.glob("flores200_devtest/*.devtest")
    codes = [path.name.split(".")[0] for path in paths]
    sentences = {code: read_lines(path) for code, path in zip(codes, paths)}
    length = len(sentences[codes[0]])
    for code, path in zip(codes, paths):
        if len(sentences[code]) != length:
            raise SourceError(f"{path}: {len(sentences[code])} lines, expected {length} (files must be parallel)")
    others = [code for code in codes if code != "eng_Latn"]
    rows = []
    for passage, start in enumerate(range(0, length - PASSAGE_SENTENCES + 1, PASSAGE_SENTENCES)):
        for variant in range(2):
            k = 2 * passage + variant
            a = others[(k * 7) % len(others)]
            if k % 4 == 0:
                src, tgt = a, "eng_Latn"
            elif k % 4 == 1:
                src, tgt = "eng_Latn", a
            else:
                b = others[(k * 13 + 5) % len(others)]
                src, tgt = (a, b) if a != b else (a, others[(others.index(a) + 1) % len(others)])
            text = " ".join(sentences[src][start:start + PASSAGE_SENTENCES]).strip()
            if not text:
                raise SourceError(f"flores200_devtest/{src}.devtest:{start + 1}: empty sentence")
            (src_iso, src_name), (tgt_iso, tgt_name) = _name(src), _name(tgt)
            rows.append(DatasetRow(
                category="multilingual", sub_category=f"translation/{src}-{tgt}",
                turns=[INSTRUCTION.format(src=src_name, tgt=tgt_name, text=text)], source=SOURCE,
                src_id=f"devtest/{start}-{start + PASSAGE_SENTENCES - 1}/{src}-{tgt}",
                language=src_iso if src != "eng_Latn" else tgt_iso, license=LICENSE))
    return rows
