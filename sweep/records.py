"""Run-folder upkeep the sweep does between client invocations (never while a run is writing)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from speedbench.records import RECORDS_NAME

DROPPED_NAME = "records.dropped.jsonl"


def records_size(run_dir: Path) -> int:
    path = run_dir / RECORDS_NAME
    return path.stat().st_size if path.exists() else 0


def drop_failed_since(run_dir: Path, offset: int) -> int:
    """Move the failed records appended after ``offset`` to ``records.dropped.jsonl``.

    Used when the server died (or the sweep was interrupted) during a run: those requests failed
    because the server went away, not because of what they asked, and the client's resume skips
    any request-turn that has a record, failed or not. Without their records they run again on
    the next invocation. Records before ``offset`` (earlier, finished attempts) are left alone.
    Returns how many records were moved.
    """
    path = run_dir / RECORDS_NAME
    if not path.exists() or path.stat().st_size <= offset:
        return 0
    data = path.read_bytes()
    head, tail = data[:offset], data[offset:]
    cut = tail.rfind(b"\n") + 1  # a torn last line is the client's to repair, dropped here too
    keep, dropped = [], []
    for line in tail[:cut].splitlines(keepends=True):
        try:
            ok = json.loads(line).get("error") is None
        except json.JSONDecodeError:
            ok = False
        (keep if ok else dropped).append(line)
    if not dropped and cut == len(tail):
        return 0
    if dropped:
        with open(run_dir / DROPPED_NAME, "ab") as handle:
            handle.write(b"".join(dropped))
    temporary = path.with_suffix(".jsonl.sweep-tmp")
    temporary.write_bytes(head + b"".join(keep))
    os.replace(temporary, path)
    return len(dropped)
