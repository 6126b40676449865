"""Submission: an uploaded bundle -> validated, recomputed, stored entry (or a clear rejection)."""
from __future__ import annotations

import html
import logging
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

    def markdown(self) -> str:
        """Status line for the UI; the message is escaped, so nothing a submitter wrote is rendered."""
        text = html.escape(self.message, quote=True)
        return f"**Accepted** as entry `{self.entry_id}`." if self.accepted else f"**Rejected:** {text}"


def handle_upload(path: str | None, store: LeaderboardStore, known_builds: KnownBuilds, limits: ArchiveLimits,
                  mirror=None) -> SubmissionResult:
    if not path:
        return SubmissionResult(False, None, "no file uploaded")
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > limits.max_archive_bytes:
            raise BundleRejected(f"upload is {size / 2**20:.1f} MiB; the limit is {limits.max_archive_bytes / 2**20:.0f} MiB")
        entry = submit_bundle(file.read_bytes(), store, known_builds, limits, mirror=mirror)
    except BundleRejected as exc:
        return SubmissionResult(False, None, str(exc))
    except Exception:  # a bug must not leak a traceback to the submitter, nor take the Space down
        log.exception("unexpected error while validating %s", file.name)
        return SubmissionResult(False, None, "internal error while validating the bundle; nothing was stored")
    return SubmissionResult(True, entry.id, f"accepted as entry {entry.id}")
