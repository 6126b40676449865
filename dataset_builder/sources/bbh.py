"""BIG-Bench Hard (suzgunmirac/BIG-Bench-Hard): 27 reasoning tasks, 6511 examples."""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import SourceError, field, read_json
from speedbench.schema import DatasetRow

SOURCE = "suzgunmirac/BIG-Bench-Hard"
LICENSE = "MIT"
FEEDS = ("reasoning",)
SUFFIX = "\n\nThink step by step, then state your answer."


def candidates(files) -> list[DatasetRow]:
    rows = []
    for path in files.glob("bbh/*.json"):
        data = read_json(path)
        examples = data.get("examples") if isinstance(data, dict) else None
        if not isinstance(examples, list):
            raise SourceError(f"{path}: expected an object with an 'examples' list")
        task = path.stem
        for index, example in enumerate(examples):
            rows.append(DatasetRow(
                category="reasoning", sub_category=f"bbh/{task}",
                turns=[field(example, "input", path, f"examples[{index}]") + SUFFIX], source=SOURCE,
                src_id=f"{task}/{index}", license=LICENSE))
    return rows
