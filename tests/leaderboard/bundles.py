"""Editing bundles the way a hostile uploader would (imported by the leaderboard tests by path)."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile

import pytest

from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.validate import submit_bundle


def unpack(bundle: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}


def repack(files: dict[str, bytes], extra: list[tarfile.TarInfo] = ()) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return gzip.compress(raw.getvalue())


def as_zip(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return raw.getvalue()


def member(files: dict[str, bytes], run: str, name: str = "records.jsonl") -> str:
    return next(n for n in sorted(files) if n.endswith(f"/{run}/{name}"))


def records(files: dict[str, bytes], run: str) -> list[dict]:
    return [json.loads(line) for line in files[member(files, run)].decode().splitlines() if line.strip()]


def with_records(files: dict[str, bytes], run: str, rows: list) -> dict[str, bytes]:
    """``rows``: dicts (dumped) or raw strings (written as they are)."""
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    return {**files, member(files, run): text.encode()}


def edit_submission(files: dict[str, bytes], **changes) -> dict[str, bytes]:
    doc = json.loads(files["submission.json"])
    for key, value in changes.items():
        if key in doc:
            doc[key] = value
        else:
            doc["metadata"][key] = value
    return {**files, "submission.json": json.dumps(doc).encode()}


def assert_rejected(store, known_builds, data: bytes, rule: str, field: str | None = None, *fragments: str,
                    **kwargs) -> BundleRejected:
    """The upload is refused by ``rule`` (named in the message), and the store is unchanged."""
    before = store.snapshot()
    with pytest.raises(BundleRejected) as caught:
        submit_bundle(data, store, known_builds, **kwargs)
    message = str(caught.value)
    assert caught.value.rule == rule, message
    assert f"[rule {rule}]" in message
    if field is not None:
        assert caught.value.field == field, message
        assert field in message
    for fragment in fragments:
        assert fragment in message, message
    assert store.snapshot() == before
    return caught.value
