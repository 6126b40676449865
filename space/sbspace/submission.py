"""Submission: an uploaded bundle -> validated, recomputed, stored entry (or a clear rejection)."""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.validate import submit_bundle

log = logging.getLogger(__name__)


@dataclass
class SubmissionResult:
    accepted: bool
    entry_id: str | None
    message: str

    def to_dict(self) -> dict:
        return {"status": "accepted" if self.accepted else "rejected", "entry_id": self.entry_id,
                "message": self.message}

    def text(self) -> str:
        """Status line for the UI, shown as plain text (a Textbox: never Markdown or HTML)."""
        return f"Accepted as entry {self.entry_id}." if self.accepted else f"Rejected: {self.message}"


def upload_cache_dir() -> Path:
    """Where Gradio keeps uploaded files (``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``)."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio").resolve()


def remove_upload(path: str | Path) -> None:
    """Delete an uploaded file and its per-upload folder from Gradio's cache (nothing outside it)."""
    cache = upload_cache_dir()
    file = Path(path).resolve()
    if cache not in file.parents:
        return
    folder = file.parent
    file.unlink(missing_ok=True)
    if folder != cache and cache in folder.parents:
        shutil.rmtree(folder, ignore_errors=True)


def handle_upload(path: str | None, store: LeaderboardStore, known_builds: KnownBuilds, limits: ArchiveLimits,
                  mirror=None) -> SubmissionResult:
    """Validate and store one upload; the uploaded file is removed from Gradio's cache afterwards."""
    if not path:
        return SubmissionResult(False, None, "no file uploaded")
    try:
        return _handle(Path(path), store, known_builds, limits, mirror)
    finally:
        remove_upload(path)


def _handle(file: Path, store: LeaderboardStore, known_builds: KnownBuilds, limits: ArchiveLimits,
            mirror) -> SubmissionResult:
    try:
        size = file.stat().st_size
        if size > limits.max_archive_bytes:
            raise BundleRejected(f"upload is {size / 2**20:.1f} MiB; the limit is {limits.max_archive_bytes / 2**20:.0f} MiB")
        entry = submit_bundle(file.read_bytes(), store, known_builds, limits, mirror=mirror)
    except BundleRejected as exc:
        return SubmissionResult(False, None, str(exc))
    except Exception:  # a bug must not leak a traceback to the submitter, nor take the Space down
        log.exception("unexpected error while validating %s", ascii(file.name))
        return SubmissionResult(False, None, "internal error while validating the bundle; nothing was stored")
    return SubmissionResult(True, entry.id, f"accepted as entry {entry.id}")
