"""Submission: an uploaded bundle -> validated, recomputed, stored entry (or a clear rejection).

Every upload, from the Submit tab or the ``/submit_bundle`` API, goes through the app's one
:class:`~speedbench.leaderboard.admission.Admission` (the shared limit and budgets). Gradio keeps
identical uploads in one content-hash folder, so several requests can name the same file: the
file is removed when the last request using it is done (in the same critical section that finds
it was the last, so no request claims a file being removed), and a request whose file an
identical one already handled and removed gets that one's answer. A file removed under a waiting
request (Gradio's cache sweep, ``UPLOAD_SWEEP_S`` in app.py) is answered as gone, not as an error.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.leaderboard.admission import Admission, submit
from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.quota import submitter_of
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import LeaderboardStore

log = logging.getLogger(__name__)
_uses: dict[Path, int] = {}  # upload file -> requests using it now
_answers: "OrderedDict[Path, SubmissionResult]" = OrderedDict()  # the last answers, by upload file
_lock = threading.Lock()
_KEPT_ANSWERS = 256
GONE = "the uploaded file is gone (removed while it waited); upload it again"


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


def files_in_use() -> list[Path]:
    """The upload files a submission is using now (the upload sweep leaves them alone)."""
    with _lock:
        return list(_uses)


def upload_cache_dir() -> Path:
    """Where Gradio keeps uploaded files (``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``)."""
    return Path(settings.gradio_temp_dir() or Path(tempfile.gettempdir()) / "gradio").resolve()


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


def over_quota(quota, path: str | None, request) -> "SubmissionResult | None":
    """The refusal of an upload past its submitter's quota (:mod:`speedbench.leaderboard.quota`),
    its file removed unread; None when it may go ahead (and it is counted)."""
    if quota is None or not path:
        return None
    username = getattr(request, "username", None) if request is not None else None
    client = getattr(request, "client", None) if request is not None else None
    wait = quota.take(submitter_of(username, getattr(client, "host", None)))
    if wait is None:
        return None
    with _lock:
        if Path(path).resolve() not in _uses:  # an identical upload in flight keeps the shared file
            remove_upload(path)
    return SubmissionResult(False, None, f"upload quota: at most {quota.per_hour} uploads per hour from one "
                                         f"submitter; try again in {max(1, int(wait // 60) + 1)} min "
                                         "[rule quota.uploads]")


def handle_upload(path: str | None, store: LeaderboardStore, known_builds: KnownBuilds, limits: ArchiveLimits,
                  admission: Admission, sync=None) -> SubmissionResult:
    """Validate and store one upload; the uploaded file is removed once no request uses it."""
    if not path:
        return SubmissionResult(False, None, "no file uploaded")
    file = Path(path).resolve()
    with _lock:
        _uses[file] = _uses.get(file, 0) + 1
    try:
        if not file.exists():
            with _lock:
                earlier = _answers.get(file)
            if earlier is not None:  # an identical upload was handled and its file removed
                return earlier if not earlier.accepted else SubmissionResult(
                    False, None, f"duplicate submission: an identical upload was accepted at the same time as entry "
                                 f"{earlier.entry_id} [rule duplicate.measurement]")
            return SubmissionResult(False, None, GONE)
        result = _handle(file, store, known_builds, limits, admission)
        with _lock:
            _answers[file] = result
            _answers.move_to_end(file)
            while len(_answers) > _KEPT_ANSWERS:
                _answers.popitem(last=False)
        if result.accepted and sync is not None:
            sync.wake()  # copy it to the Hub dataset now, in the background
        return result
    except Exception:  # a bug must not leak a traceback to the submitter, nor take the Space down
        log.exception("unexpected error while handling %s", ascii(file.name))
        return SubmissionResult(False, None, "internal error while validating the bundle; nothing was stored")
    finally:
        with _lock:
            _uses[file] -= 1
            if _uses[file] == 0:
                del _uses[file]
                remove_upload(file)  # under the lock: a request for the same bytes cannot claim it meanwhile


def _handle(file: Path, store: LeaderboardStore, known_builds: KnownBuilds, limits: ArchiveLimits,
            admission: Admission) -> SubmissionResult:
    try:
        entry = submit(file, store, known_builds, limits, admission)
    except BundleRejected as exc:
        return SubmissionResult(False, None, str(exc))
    except FileNotFoundError:
        if not file.exists():  # removed while the request waited for its slot; nothing was read or stored
            return SubmissionResult(False, None, GONE)
        log.exception("unexpected error while validating %s", ascii(file.name))
        return SubmissionResult(False, None, "internal error while validating the bundle; nothing was stored")
    except Exception:
        log.exception("unexpected error while validating %s", ascii(file.name))
        return SubmissionResult(False, None, "internal error while validating the bundle; nothing was stored")
    return SubmissionResult(True, entry.id, f"accepted as entry {entry.id}")
