"""``records.jsonl``: one line per request-turn, appended the moment it completes; resume.

Every worker process appends to the same file through its own ``O_APPEND`` descriptor, one
``write`` per whole line, so lines from several processes never interleave and a crash loses at
most the line being written. On resume the file is cut back to its last complete line (a torn
tail is a request that never finished: it runs again) and the keys already present are
skipped, so a run killed at any moment and restarted ends with every record exactly once.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from speedbench.analysis.supersession import SupersessionError, split_superseded
from speedbench.records import RECORDS_NAME, TurnRecord, read_records

import orjson  # a pinned dependency


def encode_record(record: TurnRecord) -> bytes:
    """One record's JSON, byte for byte ``orjson.dumps(record.to_dict())`` (a test holds it to that).

    orjson serializes the dataclass itself, fields in order, ``engine_stats`` nested as
    ``dataclasses.asdict`` would: no intermediate dict on the event loop at every request's end.
    A subclass may have its own ``to_dict``, so only a plain ``TurnRecord`` takes this path."""
    if type(record) is TurnRecord:
        return orjson.dumps(record)
    return orjson.dumps(record.to_dict())


class RecordWriter:
    """Appends records to ``path``; safe to share between processes (each opens its own)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.written = 0

    def write(self, record: TurnRecord) -> None:
        line = encode_record(record) + b"\n"
        view = memoryview(line)
        while view:
            done = os.write(self._fd, view)
            view = view[done:]
        self.written += 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def rewrite_records(path: str | Path, records) -> None:
    """Replace ``path`` with ``records`` in one ``os.replace`` (a reader sees the old file or the new
    one, never half); only while no worker is appending to it."""
    path = Path(path)
    temporary = path.with_suffix(".jsonl.tmp")
    temporary.write_bytes(b"".join(encode_record(r) + b"\n" for r in records))
    os.replace(temporary, path)


def repair_tail(path: str | Path) -> int:
    """Cut a torn last line (no trailing newline) off ``path``; returns the bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as handle:
        handle.seek(max(0, size - 1))
        if handle.read(1) == b"\n":
            return 0
        # Find the last newline by scanning back in blocks.
        position = size
        keep = 0
        while position > 0:
            start = max(0, position - (1 << 16))
            handle.seek(start)
            block = handle.read(position - start)
            index = block.rfind(b"\n")
            if index >= 0:
                keep = start + index + 1
                break
            position = start
        handle.truncate(keep)
        return size - keep


def load_existing(path: str | Path) -> dict[str, TurnRecord]:
    """The live record of each key already in ``path`` (after repairing a torn tail): a failed record
    a ``--retry-errors`` rerun superseded is history (``speedbench.analysis.supersession``); any other
    repeated key is an error."""
    return load_history(path)[0]


def load_history(path: str | Path) -> tuple[dict[str, TurnRecord], dict[str, int]]:
    """``(live record by key, records of each key in the file)``; the second is what a rerun of a key
    writes in its ``supersedes``."""
    repair_tail(path)
    try:
        live, superseded = split_superseded(read_records(path))
    except SupersessionError as error:
        raise ValueError(f"{path}: {error}") from None
    counts = Counter(r.record_key for r in superseded)
    existing = {r.record_key: r for r in live}
    return existing, {key: counts[key] + 1 for key in existing}
