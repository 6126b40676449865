"""The row schema of the published SPEED-Bench dataset (every config has the same fields).

Published fields: question_id, category, sub_category, turns, source, src_id, difficulty,
multiturn. We add language and license, which the published card does not carry per row.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field

import pyarrow as pa

QUALITATIVE_CATEGORIES = (
    "coding", "humanities", "math", "multilingual", "qa", "rag",
    "reasoning", "roleplay", "stem", "summarization", "writing",
)
THROUGHPUT_CATEGORIES = ("low_entropy", "mixed", "high_entropy")
THROUGHPUT_BUCKETS = {"1k": 1000, "2k": 2000, "8k": 8000, "16k": 16000, "32k": 32000}
_BUCKET_SUFFIX = re.compile(r"_(\d+k)$")
# Categories for which the published card fills `difficulty`.
CATEGORIES_WITH_DIFFICULTY = ("coding", "humanities", "math", "stem")
# Rows whose source may not be redistributed start with this sentence (reference format).
PLACEHOLDER_PREFIX = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"


def isl_bucket(config: str | None) -> str | None:
    """The input-length bucket of a throughput config (``throughput_8k`` and ``lite_throughput_1k`` ->
    ``"8k"`` / ``"1k"``); None for a config without one (``qualitative``): one answer for every reader."""
    match = _BUCKET_SUFFIX.search(config or "")
    return match[1] if match else None


def placeholder_turns(turns) -> list[int]:
    """Indices of the turns that are placeholders (any turn can be one, not only the first)."""
    return [i for i, turn in enumerate(turns or ()) if str(turn).startswith(PLACEHOLDER_PREFIX)]


ARROW_SCHEMA = pa.schema([
    pa.field("question_id", pa.string()),
    pa.field("category", pa.string()),
    pa.field("sub_category", pa.string()),
    pa.field("turns", pa.list_(pa.string())),
    pa.field("source", pa.string()),
    pa.field("src_id", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("multiturn", pa.bool_()),
    pa.field("language", pa.string()),
    pa.field("license", pa.string()),
])


def make_question_id(source: str, src_id: str, salt: str = "") -> str:
    """Stable 32-hex id derived from where the row came from (and an optional salt, e.g. the bucket)."""
    key = f"{source}\x1f{src_id}" + (f"\x1f{salt}" if salt else "")
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


@dataclass
class DatasetRow:
    category: str
    sub_category: str
    turns: list[str]
    source: str
    src_id: str
    difficulty: str = ""
    language: str = "en"
    license: str = ""
    multiturn: bool = field(default=False)
    question_id: str = ""

    def __post_init__(self) -> None:
        if not self.turns or not all(isinstance(t, str) and t for t in self.turns):
            raise ValueError(f"row {self.source}:{self.src_id}: turns must be non-empty strings")
        self.multiturn = len(self.turns) > 1
        if not self.question_id:
            self.question_id = make_question_id(self.source, self.src_id)

    def to_dict(self) -> dict:
        d = asdict(self)
        return {name: d[name] for name in ARROW_SCHEMA.names}

    @property
    def is_placeholder(self) -> bool:
        return bool(placeholder_turns(self.turns))


def rows_to_table(rows: list[DatasetRow]) -> pa.Table:
    return pa.Table.from_pylist([r.to_dict() for r in rows], schema=ARROW_SCHEMA)
