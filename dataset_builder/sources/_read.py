"""Strict readers for source files: every failure names the file and, where there is one, the line.

A missing file, a line that is not JSON, a row without a field the adapter needs: each raises
``SourceError`` with ``path:line: what is wrong``, so a broken mirror is fixed in one look.
"""
from __future__ import annotations

import csv
import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class SourceError(ValueError):
    """A source file is missing or does not hold what its adapter expects."""


def _open_text(path: Path):
    if not path.is_file():
        raise SourceError(f"{path}: source file not found")
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line; a bad line raises naming file and line."""
    with _open_text(path) as handle:
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as error:
                    raise SourceError(f"{path}:{lineno}: invalid JSON ({error.msg} at column {error.colno})") from None
                if not isinstance(obj, dict):
                    raise SourceError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
        except (OSError, EOFError, UnicodeDecodeError) as error:  # truncated gzip, bad encoding
            raise SourceError(f"{path}: cannot be read ({error})") from None


def read_json(path: Path) -> Any:
    with _open_text(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise SourceError(f"{path}:{error.lineno}: invalid JSON ({error.msg} at column {error.colno})") from None
        except (OSError, EOFError, UnicodeDecodeError) as error:
            raise SourceError(f"{path}: cannot be read ({error})") from None


def read_csv_rows(path: Path, width: int) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) of a header-less CSV whose rows must have ``width`` fields."""
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        for row in reader:
            if not row:
                continue
            if len(row) != width:
                raise SourceError(f"{path}:{reader.line_num}: expected {width} fields, found {len(row)}")
            yield reader.line_num, row


def read_lines(path: Path) -> list[str]:
    with _open_text(path) as handle:
        try:
            return [line.rstrip("\n") for line in handle]
        except UnicodeDecodeError as error:
            raise SourceError(f"{path}: not UTF-8 text ({error})") from None


def field(obj: dict, name: str, path: Path, lineno: int | str, kind: type | tuple = str) -> Any:
    """``obj[name]``, which must exist, be of ``kind`` and (for strings/lists) be non-empty."""
    if name not in obj:
        raise SourceError(f"{path}:{lineno}: missing field {name!r}")
    value = obj[name]
    if not isinstance(value, kind) or (isinstance(value, (str, list)) and not value):
        raise SourceError(f"{path}:{lineno}: field {name!r} must be a non-empty {getattr(kind, '__name__', kind)}")
    return value


_CJK = re.compile(r"[\u4e00-\u9fff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


def guess_language(text: str, default: str = "en") -> str:
    """Script-based guess for sources that mix English and CJK text (WritingBench, RoleBench)."""
    sample = text[:2000]
    if _KANA.search(sample):
        return "ja"
    if _HANGUL.search(sample):
        return "ko"
    if len(_CJK.findall(sample)) > 0.1 * max(1, len(sample.strip())) or len(_CJK.findall(sample)) > 20:
        return "zh"
    return default


def chunk_by_pattern(items: list, sizes: tuple[int, ...]) -> list[list]:
    """Split ``items`` into consecutive groups whose sizes cycle through ``sizes`` (a last short group is kept).

    Used to turn consecutive related rows (same subject, same role, same passage) into multi-turn rows
    deterministically, e.g. sizes (1, 1, 1, 2, 1, 3) makes 5 of every 9 items land in multi-turn rows.
    """
    groups, start, index = [], 0, 0
    while start < len(items):
        size = sizes[index % len(sizes)]
        groups.append(items[start:start + size])
        start += size
        index += 1
    return groups


def stable_choice(options: list | tuple, key: str):
    """A deterministic pick from ``options`` keyed by a string (independent of hash randomisation)."""
    import hashlib
    return options[int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % len(options)]
