"""The leaderboard's SQLite store (WAL mode): accepted submissions and their raw bundles.

Path: ``SPEEDBENCH_DB`` (default ``leaderboard.sqlite3`` in the working directory). The raw
archive of every accepted bundle is kept next to its entry, so the board can be rebuilt from
the records alone when the metrics change (:meth:`LeaderboardStore.rebuild`). An entry is
written in one transaction with its bundle; a rejected submission never touches the database.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from speedbench.leaderboard.schema import BundleRejected

DEFAULT_DB = "leaderboard.sqlite3"
STORE_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id              TEXT PRIMARY KEY,
    bundle_sha256   TEXT NOT NULL UNIQUE,
    archive_sha256  TEXT NOT NULL,
    submitted_at    TEXT NOT NULL,
    schema_version  INTEGER NOT NULL,
    metadata_json   TEXT NOT NULL,
    metrics_json    TEXT NOT NULL,
    metrics_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bundles (
    submission_id TEXT PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    archive       BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Entry:
    """One accepted submission as stored."""

    id: str
    bundle_sha256: str
    archive_sha256: str
    submitted_at: str
    schema_version: int
    metadata: dict
    metrics: dict
    metrics_version: str


def db_path_from_env() -> Path:
    return Path(os.environ.get("SPEEDBENCH_DB", DEFAULT_DB))


def entry_id_for(bundle_sha256: str) -> str:
    """Entry ids are derived from the bundle's content hash: short, stable, unguessable in advance."""
    return f"sb-{bundle_sha256[:12]}"


class LeaderboardStore:
    """Thread-safe access to the SQLite store (Gradio serves requests from several threads)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else db_path_from_env()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.executescript(_SCHEMA)
        self._conn.execute("INSERT OR IGNORE INTO store_info VALUES ('store_version', ?)", (str(STORE_VERSION),))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def journal_mode(self) -> str:
        with self._lock:
            return self._conn.execute("PRAGMA journal_mode").fetchone()[0]

    def has_bundle(self, bundle_sha256: str) -> str | None:
        """The id of the entry with this bundle hash, if any."""
        with self._lock:
            row = self._conn.execute("SELECT id FROM submissions WHERE bundle_sha256 = ?", (bundle_sha256,)).fetchone()
        return row[0] if row else None

    def add(self, *, bundle_sha256: str, archive_sha256: str, archive: bytes, schema_version: int,
            metadata: dict, metrics: dict, metrics_version: str, submitted_at: str | None = None) -> Entry:
        """Insert one entry and its raw bundle atomically; a duplicate bundle hash is a rejection."""
        entry = Entry(
            id=entry_id_for(bundle_sha256), bundle_sha256=bundle_sha256, archive_sha256=archive_sha256,
            submitted_at=submitted_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            schema_version=schema_version, metadata=metadata, metrics=metrics, metrics_version=metrics_version)
        try:
            with self._transaction() as conn:
                conn.execute(
                    "INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry.id, bundle_sha256, archive_sha256, entry.submitted_at, schema_version,
                     json.dumps(metadata, sort_keys=True, allow_nan=False),
                     json.dumps(metrics, sort_keys=True, allow_nan=False), metrics_version))
                conn.execute("INSERT INTO bundles VALUES (?, ?)", (entry.id, sqlite3.Binary(archive)))
        except sqlite3.IntegrityError:
            existing = self.has_bundle(bundle_sha256)
            raise BundleRejected(
                f"duplicate submission: this bundle (hash {bundle_sha256[:16]}...) is already on the board "
                f"as entry {existing}") from None
        return entry

    @staticmethod
    def _entry(row) -> Entry:
        return Entry(id=row[0], bundle_sha256=row[1], archive_sha256=row[2], submitted_at=row[3],
                     schema_version=row[4], metadata=json.loads(row[5]), metrics=json.loads(row[6]),
                     metrics_version=row[7])

    def entries(self) -> list[Entry]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM submissions ORDER BY submitted_at, id").fetchall()
        return [self._entry(r) for r in rows]

    def get(self, entry_id: str) -> Entry | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM submissions WHERE id = ?", (entry_id,)).fetchone()
        return self._entry(row) if row else None

    def archive(self, entry_id: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute("SELECT archive FROM bundles WHERE submission_id = ?", (entry_id,)).fetchone()
        return bytes(row[0]) if row else None

    def count(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]

    def snapshot(self) -> list[tuple]:
        """Every row of both tables, for tests that check a rejection left the store unchanged."""
        with self._lock:
            subs = self._conn.execute("SELECT * FROM submissions ORDER BY id").fetchall()
            blobs = self._conn.execute("SELECT submission_id, length(archive) FROM bundles ORDER BY 1").fetchall()
        return subs + blobs

    def rebuild(self, recompute: Callable[[bytes], tuple[dict, str]]) -> int:
        """Recompute every entry's metrics from its stored raw bundle; returns how many changed."""
        changed = 0
        for entry in self.entries():
            metrics, version = recompute(self.archive(entry.id))
            if metrics != entry.metrics or version != entry.metrics_version:
                with self._transaction() as conn:
                    conn.execute("UPDATE submissions SET metrics_json = ?, metrics_version = ? WHERE id = ?",
                                 (json.dumps(metrics, sort_keys=True, allow_nan=False), version, entry.id))
                changed += 1
        return changed
