"""The board's services and their start-up lifecycle, whatever page serves them (the Space's
Gradio app, a test, a maintainer's script).

:func:`start_services` opens the store (unreadable entries quarantined, kept for a maintainer),
loads the known builds, makes the one admission control, starts the Hub sync in the background
(restoring what the store lacks under the admission control, pushing the outbox; a missing,
refusing or hanging Hub never delays the page) and back-fills duplicate digests stored under an
older digest version. No UI library is imported here.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from speedbench.leaderboard.admission import Admission, Budget, reservation
from speedbench.leaderboard.canonical import DIGEST_VERSION
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.quota import UploadQuota
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.sync import MirrorSync
from speedbench.leaderboard.restore import restore_bundle
from speedbench.leaderboard.validate import STORED_LIMITS, backfill_digests

log = logging.getLogger("speedbench.leaderboard")


@dataclass
class BoardServices:
    """What every request of the board shares."""

    store: LeaderboardStore
    known_builds: KnownBuilds
    admission: Admission
    sync: MirrorSync | None
    quota: UploadQuota

    def mirror_note(self) -> str:
        """The Hub sync's state for the note above the board ("" when there is nothing to say)."""
        return self.sync.status().text() if self.sync is not None else ""


def start_services(db_path: Path, known_builds_paths: list[str] | None, budget: Budget, mirror_repo: str,
                   uploads_per_hour: int, *, store: LeaderboardStore | None = None,
                   known_builds: KnownBuilds | None = None, mirror: HubMirror | None = None) -> BoardServices:
    """Open and start everything (``store``, ``known_builds`` and ``mirror`` given: used as they are)."""
    store = store or LeaderboardStore(db_path)
    known_builds = known_builds if known_builds is not None else KnownBuilds.load(known_builds_paths)
    admission = Admission(budget)
    for entry_id, reason in store.quarantine_unreadable():
        log.warning("quarantined stored entry %s: %s", entry_id, reason)  # off the board, kept for a maintainer
    if mirror is None and mirror_repo:
        mirror = HubMirror(mirror_repo)
    sync = None
    if mirror is not None:
        def restore(entry_id, document, archive, verification_runs):
            need, _ = reservation(archive, STORED_LIMITS)
            if verification_runs is not None:  # parsed too, in the same slot
                need += reservation(verification_runs, STORED_LIMITS)[0]
            with admission.slot(need):
                return restore_bundle(entry_id, document, archive, store, known_builds, verification_runs)

        sync = MirrorSync(store, mirror, restore).start()
    if store.missing_digests(DIGEST_VERSION):  # entries stored under an older duplicate digest
        def backfill():
            with admission.slot(0):
                for line in backfill_digests(store, known_builds):
                    log.warning("digest backfill: %s", ascii(line))

        threading.Thread(target=backfill, name="speedbench-digests", daemon=True).start()
    return BoardServices(store, known_builds, admission, sync, UploadQuota(uploads_per_hour))
