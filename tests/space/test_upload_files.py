"""The Space's copy of an upload (Gradio's cache): identical uploads share one file, removed when the
last request using it is done; a request never finds it removed under it (issue 24's 'identical
uploads each get their own answer', found again by bench/leaderboard_load.py: 1 of 8 identical
uploads answered 'internal error')."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from speedbench.leaderboard.admission import Admission
from speedbench.leaderboard.archive import ArchiveLimits

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"


@pytest.fixture
def submission(tmp_path, monkeypatch):
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import submission

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    return submission


def _upload(tmp_path, data: bytes) -> Path:
    path = tmp_path / "gradio" / "0123abcd" / "bundle.tar.gz"  # Gradio's content-hash folder
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_the_last_request_removes_the_file_while_no_other_can_claim_it(submission, tmp_path, seeded_store,
                                                                      known_builds, monkeypatch):
    """The file is removed in the same critical section that decides this request was its last user:
    a request for the same bytes claiming it in between found the file, then lost it under its
    validation (FileNotFoundError: 'internal error')."""
    path = _upload(tmp_path, b"not a bundle")
    real_remove, held = submission.remove_upload, []
    monkeypatch.setattr(submission, "remove_upload", lambda file: held.append(submission._lock.locked())
                        or real_remove(file))
    result = submission.handle_upload(str(path), seeded_store, known_builds, ArchiveLimits(), Admission())
    assert not result.accepted and "archive.format" in result.message
    assert held == [True] and not path.exists() and not path.parent.exists()


def test_a_file_removed_under_its_validation_is_a_clear_answer(submission, tmp_path, seeded_store, known_builds,
                                                               monkeypatch):
    """Gradio's cache sweep (uploads older than 2 h) may remove a file whose request waited that long."""
    path = _upload(tmp_path, b"waited too long")
    before = seeded_store.snapshot()

    def swept_then_validated(source, *args):
        Path(source).unlink()
        return real_submit(source, *args)

    real_submit = submission.submit
    monkeypatch.setattr(submission, "submit", swept_then_validated)
    result = submission.handle_upload(str(path), seeded_store, known_builds, ArchiveLimits(), Admission())
    assert not result.accepted and "internal error" not in result.message
    assert result.message == "the uploaded file is gone (removed while it waited); upload it again"
    assert seeded_store.snapshot() == before
