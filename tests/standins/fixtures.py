"""Small helpers for tests and benchmarks: tiny dataset folders, running the CLI, reading JSONL."""
from __future__ import annotations

import json
from pathlib import Path

from speedbench.schema import DatasetRow, rows_to_table

STORY_STARTS = ["Once upon a time there was a cat", "Tom had a red ball", "Lily went to the park",
                "The dog was very happy", "A little bird sang a song", "Sue and Ben played in the sun",
                "The sun was hot and bright", "Max found a big box"]


def write_dataset(folder: Path, rows: list[DatasetRow], config: str = "tiny") -> Path:
    """A dataset folder like `speedbench build` writes: data/<config>/test-00000-of-00001.parquet."""
    import pyarrow.parquet as pq

    data = Path(folder) / "data" / config
    data.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows_to_table(rows), data / "test-00000-of-00001.parquet")
    return Path(folder)


def story_rows(count: int, multiturn_every: int = 0) -> list[DatasetRow]:
    """Short story openings (the stories260K model continues them); every n-th row has 3 turns."""
    rows = []
    for index in range(count):
        turns = [STORY_STARTS[index % len(STORY_STARTS)] + f" number {index}"]
        if multiturn_every and index % multiturn_every == multiturn_every - 1:
            turns += ["What happened next?", "How did it end?"]
        rows.append(DatasetRow(category=("writing", "qa", "roleplay")[index % 3], sub_category="story",
                               turns=turns, source="test", src_id=str(index)))
    return rows


def run_cli(engine: str, url: str, dataset: Path, out: Path, tokenizer: Path, *extra: str) -> int:
    """`speedbench run` in this process (config "tiny", no progress bar, 200 resamples)."""
    from speedbench.cli import main

    return main(["run", "--engine", engine, "--url", url, "--tokenizer", str(tokenizer), "--dataset", str(dataset),
                 "--config", "tiny", "--out", str(out), "--no-progress", "--resamples", "200", *extra])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
