"""MMATH (RUCAIBox/MMATH): 374 competition problems in 10 languages; the nine non-English ones feed multilingual."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, field, read_json
from speedbench.schema import DatasetRow

SOURCE = "RUCAIBox/MMATH"
LICENSE = "MIT"
FEEDS = ("multilingual",)
LANGS = ("ar", "es", "fr", "ja", "ko", "pt", "th", "vi", "zh")


def candidates(files) -> list[DatasetRow]:
    rows = []
    for lang in LANGS:
        path = files.path(f"mmath/{lang}.json")
        problems = read_json(path)
        if not isinstance(problems, list):
            raise SourceError(f"{path}: expected a JSON list of problems")
        for index, obj in enumerate(problems):
            rows.append(DatasetRow(
                category="multilingual", sub_category=f"math/{lang}",
                turns=[field(obj, "question", path, f"[{index}]")], source=SOURCE,
                src_id=f"{lang}/{obj.get('data_source', 'mmath')}/{obj.get('gid', index)}",
                language=lang, license=LICENSE))
    return rows
