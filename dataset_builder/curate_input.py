"""Reading anyone's prompts for `speedbench curate`: JSONL, parquet or a Hugging Face dataset.

Each record gives one prompt: ``text_field`` holds a string (one turn) or a list of turns (strings,
or chat messages ``{"role": ..., "content": ...}`` of which the user messages are the turns);
``group_by`` names the column whose values become the categories; ``id_field`` (optional) a unique
id per record (default: the record's position). Input is untrusted: every problem is reported with
the file, the row and the field.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

# Records that are clearly not prompts are refused rather than embedded.
MAX_TURN_CHARS = 1_000_000
MAX_TURNS = 64


class CurateInputError(ValueError):
    """Bad input: the message names the file, the row and the field."""


@dataclass(frozen=True)
class Prompt:
    row: int                 # position in the input (0-based), for messages
    prompt_id: str
    group: str
    turns: tuple[str, ...]
    extra: dict[str, str]    # optional columns: sub_category, language, difficulty


@dataclass(frozen=True)
class InputSpec:
    path: str
    text_field: str
    group_by: str
    id_field: str | None = None
    sub_category_field: str | None = None
    language_field: str | None = None
    difficulty_field: str | None = None
    hf_config: str | None = None
    split: str = "train"


def _records(spec: InputSpec) -> Iterator[tuple[int, Any]]:
    path = Path(spec.path)
    if path.is_file() and path.suffix in (".jsonl", ".ndjson", ".json"):
        import orjson

        with path.open("rb") as handle:
            for number, line in enumerate(handle):
                if not line.strip():
                    continue
                try:
                    yield number, orjson.loads(line)
                except orjson.JSONDecodeError as error:
                    raise CurateInputError(f"{path} line {number + 1}: not valid JSON ({error})") from None
        return
    if path.is_file() and path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.ParquetFile(path).read()
        except Exception as error:  # pyarrow raises several types for a corrupt file
            raise CurateInputError(f"{path}: not a readable parquet file ({error})") from None
        yield from enumerate(table.to_pylist())
        return
    if path.is_file():
        raise CurateInputError(f"{path}: unknown input format (expected .jsonl, .json lines or .parquet)")
    yield from enumerate(_hf_records(spec))


def _hf_records(spec: InputSpec):
    """A Hugging Face dataset: a local folder ``load_dataset`` understands, or a Hub id."""
    import datasets

    try:
        dataset = datasets.load_dataset(spec.path, spec.hf_config, split=spec.split)
    except Exception as error:  # datasets raises many types for a missing/odd dataset
        raise CurateInputError(f"{spec.path}: cannot load as a Hugging Face dataset "
                               f"(config {spec.hf_config!r}, split {spec.split!r}): {error}") from None
    return iter(dataset)


def row_label(spec: InputSpec, row: int) -> str:
    path = Path(spec.path)
    return f"{spec.path} line {row + 1}" if path.suffix in (".jsonl", ".ndjson", ".json") else f"{spec.path} row {row}"


def parse_turns(value: Any, where: str, field: str) -> tuple[str, ...]:
    """A string, a list of strings, or a list of chat messages -> the non-empty turns."""
    if isinstance(value, str):
        turns = [value]
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(item, dict) for item in value):
            if any("content" not in item for item in value):
                raise CurateInputError(f"{where}: field {field!r}: a chat message has no 'content'")
            has_roles = any("role" in item for item in value)
            turns = [item["content"] for item in value if not has_roles or item.get("role") == "user"]
        else:
            turns = list(value)
    else:
        raise CurateInputError(f"{where}: field {field!r} must be a string or a list of turns, "
                               f"not {type(value).__name__}")
    if not turns:
        raise CurateInputError(f"{where}: field {field!r} has no turns")
    if len(turns) > MAX_TURNS:
        raise CurateInputError(f"{where}: field {field!r} has {len(turns)} turns (at most {MAX_TURNS})")
    for number, turn in enumerate(turns, 1):
        if not isinstance(turn, str):
            raise CurateInputError(f"{where}: field {field!r} turn {number} is {type(turn).__name__}, not text")
        if not turn.strip():
            raise CurateInputError(f"{where}: field {field!r} turn {number} is empty")
        if len(turn) > MAX_TURN_CHARS:
            raise CurateInputError(f"{where}: field {field!r} turn {number} has {len(turn):,} characters "
                                   f"(at most {MAX_TURN_CHARS:,})")
    return tuple(turns)


def _scalar(record: dict, field: str, where: str, required: bool = True) -> str:
    if field not in record or record[field] is None:
        if required:
            raise CurateInputError(f"{where}: missing field {field!r}")
        return ""
    value = record[field]
    if isinstance(value, (dict, list, tuple)):
        raise CurateInputError(f"{where}: field {field!r} must be a scalar, not {type(value).__name__}")
    text = str(value).strip()
    if required and not text:
        raise CurateInputError(f"{where}: field {field!r} is empty")
    return text


def read_prompts(spec: InputSpec) -> list[Prompt]:
    """Every record as a ``Prompt``; duplicate ids, missing fields and empty texts are errors."""
    prompts: list[Prompt] = []
    first_row_of: dict[str, int] = {}
    optional = {"sub_category": spec.sub_category_field, "language": spec.language_field,
                "difficulty": spec.difficulty_field}
    for row, record in _records(spec):
        where = row_label(spec, row)
        if not isinstance(record, dict):
            raise CurateInputError(f"{where}: a record must be an object, not {type(record).__name__}")
        if spec.text_field not in record or record[spec.text_field] is None:
            raise CurateInputError(f"{where}: missing field {spec.text_field!r}")
        turns = parse_turns(record[spec.text_field], where, spec.text_field)
        group = _scalar(record, spec.group_by, where)
        prompt_id = _scalar(record, spec.id_field, where) if spec.id_field else str(row)
        if prompt_id in first_row_of:
            raise CurateInputError(f"{where}: field {spec.id_field or '(position)'!r} value {prompt_id!r} "
                                   f"duplicates {row_label(spec, first_row_of[prompt_id])}")
        first_row_of[prompt_id] = row
        extra = {name: _scalar(record, field, where, required=False) for name, field in optional.items() if field}
        prompts.append(Prompt(row=row, prompt_id=prompt_id, group=group, turns=turns, extra=extra))
    if not prompts:
        raise CurateInputError(f"{spec.path}: no records")
    return prompts


def check_group_sizes(spec: InputSpec, prompts: list[Prompt], per_group: int) -> None:
    sizes = Counter(p.group for p in prompts)
    small = sorted(group for group, size in sizes.items() if size < per_group)
    if small:
        first = {p.group: p.row for p in reversed(prompts)}
        details = "; ".join(f"{group!r} has {sizes[group]} (first at {row_label(spec, first[group])})"
                            for group in small[:10])
        raise CurateInputError(f"{spec.path}: field {spec.group_by!r}: {len(small)} group(s) smaller than "
                               f"--per-group {per_group}: {details}")
