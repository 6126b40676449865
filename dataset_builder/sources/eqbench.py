"""EQ-Bench creative writing prompts (EQ-bench/EQ-Bench): 19 prompts, each with seed modifiers.

Each prompt's ``<SEED>`` placeholder is filled with each of its modifiers, as EQ-Bench does.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, field, read_json
from speedbench.schema import DatasetRow

SOURCE = "EQ-bench/EQ-Bench"
LICENSE = "MIT"
FILE = "eqbench/creative_writing_prompts.json"
FEEDS = ("writing",)


def candidates(files) -> list[DatasetRow]:
    path = files.path(FILE)
    prompts = read_json(path)
    if not isinstance(prompts, dict):
        raise SourceError(f"{path}: expected a JSON object of prompts")
    rows = []
    for key, entry in prompts.items():
        prompt = field(entry, "writing_prompt", path, f"[{key!r}]")
        modifiers = entry.get("seed_modifiers") or [""]
        for m, modifier in enumerate(modifiers):
            text = prompt.replace("<SEED>", str(modifier).strip()).replace("  ", " ").strip()
            rows.append(DatasetRow(
                category="writing", sub_category="creative_writing/eq_bench", turns=[text], source=SOURCE,
                src_id=f"creative_writing/{key}/{m}", license=LICENSE))
    return rows
