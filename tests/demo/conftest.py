"""Small parent configs written straight into a dataset folder, for the SPEED-Lite and demo tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from speedbench.dataset_builder.registry import BuiltConfig
from speedbench.schema import QUALITATIVE_CATEGORIES, THROUGHPUT_CATEGORIES, DatasetRow

STORIES = ["Once upon a time there was a cat", "Tom had a red ball", "Lily went to the park",
           "The dog was very happy", "A little bird sang a song", "Sue and Ben played in the sun"]


def parent_rows(categories, per_category: int, long_every: int = 0) -> list[DatasetRow]:
    rows = []
    for c_index, category in enumerate(categories):
        for n in range(per_category):
            text = f"{STORIES[(c_index + n) % len(STORIES)]} in the {category} story {n}."
            if long_every and n % long_every == long_every - 1:
                text += " And then they played." * 200  # ~1,000 o200k tokens
            turns = [text] + (["What happened next?"] if n == 1 else [])
            rows.append(DatasetRow(category=category, sub_category="story", turns=turns, source="test",
                                   src_id=f"{category}-{n}"))
    return rows


def write_parents(folder: Path, per_category: int = 5, per_tier: int = 4, long_every: int = 0) -> Path:
    from speedbench.dataset_builder.writer import write_dataset

    built = [BuiltConfig("qualitative", parent_rows(QUALITATIVE_CATEGORIES, per_category, long_every)),
             BuiltConfig("throughput_1k", parent_rows(THROUGHPUT_CATEGORIES, per_tier))]
    write_dataset(folder, built, {"seed": 0, "options": {"test": True}})
    return folder


@pytest.fixture
def parents_writer():
    return write_parents
