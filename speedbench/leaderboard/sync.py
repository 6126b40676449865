"""Keeping the local store and the Hub dataset (the store of record, :mod:`.mirror`) in step.

One background thread per app (:meth:`MirrorSync.start`), so a missing, refusing or hanging Hub
never blocks a page or a request:

1. it makes sure the dataset repo exists, retrying with backoff while the Hub cannot be reached;
2. it restores every entry the repo holds and the local store lacks (a fresh Space, or a store
   that lost some): each bundle is checked against its document's hash and re-validated
   (``restore_entry``), keeps the document's ISO date, never its trust level (a verification is
   re-checked on its stored runs, ``verifications/<id>``); an entry that fails
   in any way is skipped and reported, and pushes run even while the restore keeps failing;
3. it pushes the outbox (the entries whose current state has not reached the repo: new ones,
   verified ones), one commit per entry, oldest first; a failed push is retried with
   exponential backoff (``BACKOFF_S``) until it lands, across restarts (the outbox is a table of
   the SQLite store). The outbox is read when an upload wakes the thread and at least every
   ``POLL_S`` (a verification made by another process on the same store queues its entry too).
   A new entry whose id the repo holds already (the same measurement, accepted there before the
   Space restarted on an empty disk and sent again before the restore) keeps the repo's date and
   verification instead of overwriting them.

:meth:`MirrorSync.status` says how far behind the repo is; the Space shows it. The steps are
also callable one at a time (:meth:`restore_missing`, :meth:`push_due`) for tests and the CLI.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from speedbench.leaderboard.mirror import HubMirror, RepoListing, entry_document
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import LeaderboardStore

log = logging.getLogger(__name__)
BACKOFF_S = (5.0, 600.0)  # first retry after 5 s, doubling up to 10 min
# The outbox is read again at least this often: another process on the same store (``python -m
# speedbench.leaderboard verify``) queues entries without waking this thread.
POLL_S = 60.0


def _transport_error(exc: Exception) -> bool:
    """The Hub or the network failed (retried later), as opposed to an entry that cannot be restored."""
    return isinstance(exc, (OSError, TimeoutError)) or type(exc).__module__.split(".")[0] in ("httpx", "httpx2",
                                                                                              "httpcore")


def backoff(attempts: int, base: float = BACKOFF_S[0], cap: float = BACKOFF_S[1]) -> float:
    return min(cap, base * 2 ** max(0, attempts - 1))


@dataclass
class SyncStatus:
    """What the Space says about the store of record (shown above the board)."""

    repo_id: str
    phase: str = "starting"  # starting | restoring | in step | behind | unreachable
    pending: int = 0
    restored: int = 0
    skipped: list[str] = field(default_factory=list)
    last_error: str = ""

    def text(self) -> str:
        skipped = ""
        if self.skipped:  # plain text (the note is a text box); ascii(): a file name is the repo's, not ours
            n = len(self.skipped)
            skipped = (f"{n} file{'' if n == 1 else 's'} in the Hub dataset not restored (kept there for a "
                       f"maintainer), e.g. {ascii(self.skipped[0][:160])}.")
        if self.phase == "in step":
            return skipped
        what = {"starting": "connecting to the Hub dataset", "restoring": "restoring entries from the Hub dataset",
                "behind": "the Hub dataset is behind", "unreachable": "the Hub dataset cannot be reached"}
        parts = [f"Store of record {self.repo_id}: {what.get(self.phase, self.phase)}"]
        if self.pending:
            parts.append(f"{self.pending} entr{'y' if self.pending == 1 else 'ies'} waiting to be copied there")
        if self.last_error:
            parts.append(f"last error: {self.last_error[:160]}")
        return "; ".join(parts) + ". The board shows what this copy holds." + (" " + skipped if skipped else "")


class MirrorSync:
    """Restore and push in one background thread (module docstring)."""

    def __init__(self, store: LeaderboardStore, mirror: HubMirror,
                 restore_entry: Callable[[str, dict | None, bytes, bytes | None], object], clock: Callable[[], float] = time.time):
        self.store, self.mirror, self.restore_entry, self.clock = store, mirror, restore_entry, clock
        self._status = SyncStatus(repo_id=mirror.repo_id)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one restore or push at a time
        self._thread: threading.Thread | None = None
        self.restored_once = threading.Event()
        self.attempted = threading.Event()  # the first restore attempt ended, landed or not

    # ---- status ---------------------------------------------------------------------------
    def status(self) -> SyncStatus:
        self._status.pending = len(self.store.outbox())
        if self._status.phase in ("in step", "behind"):
            self._status.phase = "behind" if self._status.pending else "in step"
        return self._status

    def _failed(self, what: str, exc: Exception) -> None:
        self._status.last_error = f"{what}: {type(exc).__name__}: {str(exc)[:200]}"
        log.warning("hub sync: %s", self._status.last_error)

    # ---- the steps --------------------------------------------------------------------------
    def restore_missing(self) -> int:
        """Restore every entry the repo has and the store lacks; returns how many were added. An
        entry that fails in any way (a document too large, nested too deep or not an object, a
        bundle that does not match it or no longer passes, an id the board did not issue) is
        skipped, named in ``status().skipped`` and kept in the repo for a maintainer: one bad file
        never stops the rest, nor the pushes after it."""
        with self._lock:
            self._status.phase = "restoring"
            self.mirror.ensure_repo()
            listing: RepoListing = self.mirror.listing()
            have = self.store.ids()
            added = 0
            for path in listing.foreign:
                self._skip(path, "not a board entry id (sb- and 12 hex digits)")
            for entry_id in sorted(listing.ids - have):
                if entry_id in have:  # restored meanwhile under the id it was re-issued (.restore)
                    continue
                if entry_id not in listing.bundles:
                    self._skip(entry_id, "entry document without its bundle")
                    continue
                try:
                    document, archive = self.mirror.read_entry(listing, entry_id)
                    runs = self.mirror.read_verification(listing, entry_id) if (document or {}).get(
                        "trust") == "verified" else None
                    entry = self.restore_entry(entry_id, document, archive, runs)
                    if entry is not None:
                        added += 1
                        have.add(getattr(entry, "id", entry_id))
                except Exception as exc:  # whatever it is (RecursionError, MemoryError ...): this entry only
                    if _transport_error(exc):
                        raise  # the Hub failed, not the entry: the whole restore is retried, pushes go on
                    self._skip(entry_id, f"{type(exc).__name__}: {str(exc)[:300]}"
                               if not isinstance(exc, (BundleRejected, ValueError)) else str(exc)[:300])
            self._status.restored += added
            self._status.phase = "behind"
            self.restored_once.set()
            return added

    def _skip(self, what: str, reason: str) -> None:
        line = f"{what}: {reason}"
        if line not in self._status.skipped:
            self._status.skipped.append(line)
        log.warning("not restored: %s", ascii(line))

    def push_due(self, now: float | None = None) -> int:
        """Push every outbox entry that is due; returns how many landed."""
        now = self.clock() if now is None else now
        landed = 0
        with self._lock:
            for entry_id, attempts, _, with_bundle in self.store.outbox(due_before=now):
                try:
                    landed += self._push(entry_id, with_bundle)
                except Exception as exc:  # the Hub is down, slow or refuses: retried later
                    self._failed(f"push {entry_id}", exc)
                    self.store.outbox_failed(entry_id, self._status.last_error, now + backoff(attempts + 1))
        return landed

    def _push(self, entry_id: str, with_bundle: bool) -> bool:
        """One entry's commit; False when there was nothing to copy (quarantined or gone)."""
        stale: tuple[str, ...] = ()
        if with_bundle:  # never pushed from here: the repo may hold its measurement already
            stale = self._adopt_hub_copy(entry_id)
        # the state before the entry: a change between the two reads keeps it queued, never lost
        state = self.store.state_token(entry_id)
        entry = self.store.get(entry_id)
        if entry is None:
            self.store.outbox_done(entry_id, "")
            return False
        runs = self.store.archive(entry_id, "verifications") if entry.trust == "verified" else None
        self.mirror.push(entry_document(entry), self.store.archive(entry_id) if with_bundle else None, stale, runs)
        self.store.outbox_done(entry_id, state)
        return True

    def _adopt_hub_copy(self, entry_id: str) -> tuple[str, ...]:
        """An entry whose id the repo holds (the same measurement, accepted there before this store
        was emptied) keeps the repo's date when it is an ISO date; trust is never taken from the
        repo's document (anyone with write access to the dataset could have written it): this
        copy keeps its own level. Returns the repo's bundle paths of it (replaced by this copy's)."""
        from speedbench.leaderboard.validate import iso_date

        document, bundles = self.mirror.hub_copy(entry_id)
        entry = self.store.get(entry_id)
        if document is None or entry is None:
            return bundles
        date = iso_date(document.get("submitted_at"))
        self.store.adopt(entry_id, date or entry.submitted_at, entry.trust, entry.verification)
        return bundles

    # ---- the thread ---------------------------------------------------------------------------
    def start(self) -> "MirrorSync":
        self._thread = threading.Thread(target=self._run, name="speedbench-hub-sync", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Something was queued: push now instead of at the next retry time."""
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        """Restore until it has run once, with backoff; the outbox is pushed all along (a restore
        that keeps failing never holds back an entry accepted meanwhile)."""
        attempts, restore_at = 0, 0.0
        while not self._stop.is_set():
            self._wake.clear()
            if not self.restored_once.is_set() and self.clock() >= restore_at:
                try:
                    self.restore_missing()
                except Exception as exc:  # unreachable, refused, timed out: the board serves what it has
                    attempts += 1
                    self._status.phase = "unreachable"
                    self._failed("restore", exc)
                    restore_at = self.clock() + backoff(attempts)
                self.attempted.set()
            try:
                self.push_due()
                due = self.store.next_outbox_attempt()
                self.status()
            except Exception as exc:  # the store closed under us (shutdown) or a bug: never a dead thread
                if self._stop.is_set():
                    return
                self._failed("sync", exc)
                due = self.clock() + BACKOFF_S[1]
            if not self.restored_once.is_set():
                due = restore_at if due is None else min(due, restore_at)
            wait = POLL_S if due is None else min(POLL_S, max(0.0, due - self.clock()))
            self._wake.wait(wait)
