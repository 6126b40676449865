"""The leaderboard's SQLite store (WAL mode): accepted submissions and their raw bundles.

Path: ``SPEEDBENCH_DB`` (default ``leaderboard.sqlite3`` in the working directory). The raw
archive of every accepted bundle is kept next to its entry, so the board can be rebuilt from
the records alone when the metrics change (:meth:`LeaderboardStore.rebuild`). An entry is
written in one transaction with its bundle and its row in the *outbox* (the entries whose
current state has not reached the Hub dataset yet, :mod:`.sync`); a trust change queues the
entry again; a verification's packed runs are kept beside it (``verifications``), so a restore can
re-check it. A rejected submission never touches the database.
"""
from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from speedbench import settings
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store_schema import ENTRY_COLUMNS as _ENTRY_COLUMNS
from speedbench.leaderboard.store_schema import REVISION_TRIGGER as _REVISION_TRIGGER
from speedbench.leaderboard.store_schema import SCHEMA as _SCHEMA
from speedbench.leaderboard.store_schema import V2_COLUMNS as _V2_COLUMNS

DEFAULT_DB = "leaderboard.sqlite3"
STORE_VERSION = 4  # 4: the verifications table and each row's revision (issue 32)
TRUST_LEVELS = ("self-reported", "verified")


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
    trust: str = "self-reported"
    warnings: list = field(default_factory=list)
    verification: dict | None = None


_STATE_COLUMNS = "trust, verification_json"
# a JSON escape of a UTF-16 surrogate: the only way a stored row's text decodes to a string that
# cannot be encoded as UTF-8 (the rows are written with ensure_ascii; SQLite's text is UTF-8)
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _state(row) -> str:
    return json.dumps([row[0], row[1]])


def db_path_from_env() -> Path:
    return settings.leaderboard_db() or Path(DEFAULT_DB)


def entry_id_for(bundle_sha256: str) -> str:
    """Entry ids are derived from the bundle's content hash: short, stable, unguessable in advance."""
    return f"sb-{bundle_sha256[:12]}"


class LeaderboardStore:
    """Thread-safe access to the SQLite store (Gradio serves requests from several threads)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else db_path_from_env()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._writes = 0  # commits through this connection (``version``)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.executescript(_SCHEMA)
        present = {row[1] for row in self._conn.execute("PRAGMA table_info(submissions)")}
        for name, kind in _V2_COLUMNS:
            if name not in present:
                self._conn.execute(f"ALTER TABLE submissions ADD COLUMN {name} {kind}")
        self._conn.execute(_REVISION_TRIGGER)
        self._conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS submissions_measurement ON submissions(measurement_sha256)")
        self._conn.execute("CREATE INDEX IF NOT EXISTS submissions_archive ON submissions(archive_sha256)")
        self._conn.execute("INSERT OR REPLACE INTO store_info VALUES ('store_version', ?)", (str(STORE_VERSION),))

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
            self._writes += 1

    def version(self) -> tuple[int, int]:
        """Changes whenever anything was committed to the store, by this connection (its own count)
        or by another (SQLite's ``data_version``): the key of the Space's cached board rows."""
        with self._lock:
            return self._conn.execute("PRAGMA data_version").fetchone()[0], self._writes

    def journal_mode(self) -> str:
        with self._lock:
            return self._conn.execute("PRAGMA journal_mode").fetchone()[0]

    def _find(self, column: str, value: str) -> str | None:
        with self._lock:
            row = self._conn.execute(f"SELECT id FROM submissions WHERE {column} = ?", (value,)).fetchone()
        return row[0] if row else None

    # the id of the entry, if any, with this raw content hash / uploaded as exactly these bytes /
    # with this measurement digest (:mod:`.canonical`) / with this token digest
    def has_bundle(self, bundle_sha256: str) -> str | None:
        return self._find("bundle_sha256", bundle_sha256)

    def has_archive(self, archive_sha256: str) -> str | None:
        return self._find("archive_sha256", archive_sha256)

    def has_measurement(self, measurement_sha256: str) -> str | None:
        return self._find("measurement_sha256", measurement_sha256)

    def has_tokens(self, tokens_sha256: str) -> str | None:
        return self._find("tokens_sha256", tokens_sha256)

    def add(self, *, bundle_sha256: str, archive_sha256: str, archive: bytes, schema_version: int,
            metadata: dict, metrics: dict, metrics_version: str, submitted_at: str | None = None,
            measurement_sha256: str | None = None, tokens_sha256: str | None = None,
            warnings: list | None = None, entry_id: str | None = None, trust: str = "self-reported",
            verification: dict | None = None, digest_version: int | None = None, enqueue: bool = True,
            verification_runs: bytes | None = None) -> Entry:
        """Insert one entry, its raw bundle and (``enqueue``) its outbox row atomically; a duplicate
        measurement is a rejection. ``entry_id``/``trust``/``verification(_runs)``: a restored entry
        whose verification re-checked keeps them (and is not queued: the Hub has it already)."""
        measurement_sha256 = measurement_sha256 or bundle_sha256
        if trust not in TRUST_LEVELS:
            raise ValueError(f"trust must be one of {TRUST_LEVELS}")
        entry = Entry(
            id=entry_id or entry_id_for(measurement_sha256), bundle_sha256=bundle_sha256,
            archive_sha256=archive_sha256,
            submitted_at=submitted_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            schema_version=schema_version, metadata=metadata, metrics=metrics, metrics_version=metrics_version,
            warnings=list(warnings or []), trust=trust, verification=verification)
        try:
            with self._transaction() as conn:
                conn.execute(
                    "INSERT INTO submissions (id, bundle_sha256, archive_sha256, submitted_at, schema_version, "
                    "metadata_json, metrics_json, metrics_version, measurement_sha256, tokens_sha256, trust, "
                    "warnings_json, verification_json, digest_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry.id, bundle_sha256, archive_sha256, entry.submitted_at, schema_version,
                     json.dumps(metadata, sort_keys=True, allow_nan=False),
                     json.dumps(metrics, sort_keys=True, allow_nan=False), metrics_version, measurement_sha256,
                     tokens_sha256, entry.trust, json.dumps(entry.warnings, sort_keys=True, allow_nan=False),
                     json.dumps(verification, sort_keys=True, allow_nan=False) if verification else None,
                     digest_version))
                conn.execute("INSERT INTO bundles VALUES (?, ?)", (entry.id, sqlite3.Binary(archive)))
                if verification_runs is not None:
                    conn.execute("INSERT INTO verifications VALUES (?, ?)", (entry.id, sqlite3.Binary(verification_runs)))
                if enqueue:
                    self._enqueue(conn, entry.id, with_bundle=True)
        except sqlite3.IntegrityError:
            existing = self.has_measurement(measurement_sha256) or self.has_bundle(bundle_sha256)
            raise BundleRejected(
                f"duplicate submission: this measurement (digest {measurement_sha256[:16]}...) is already on the board "
                f"as entry {existing}", rule="duplicate.measurement") from None
        return entry

    @staticmethod
    def _entry(row) -> Entry:
        """An entry from its row; a row that is not valid, UTF-8 encodable JSON is a ValueError."""
        metadata, metrics = json.loads(row[5]), json.loads(row[6])
        warnings = json.loads(row[9] or "[]")
        verification = json.loads(row[10]) if row[10] else None
        if not isinstance(metadata, dict) or not isinstance(metrics, dict) or not isinstance(warnings, list):
            raise ValueError("metadata, metrics and warnings must be JSON objects / lists")
        if _SURROGATE.search("".join(str(v) for v in row[5:11])):  # else no text in it can hold one
            json.dumps([metadata, metrics, warnings, verification], ensure_ascii=False).encode("utf-8")
        return Entry(id=row[0], bundle_sha256=row[1], archive_sha256=row[2], submitted_at=str(row[3]),
                     schema_version=row[4], metadata=metadata, metrics=metrics, metrics_version=row[7],
                     trust=row[8] if row[8] in TRUST_LEVELS else "self-reported", warnings=warnings,
                     verification=verification)

    def _rows(self, where: str = "", args: tuple = ()) -> list:
        with self._lock:
            return self._conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM submissions {where} ORDER BY submitted_at, id",
                                      args).fetchall()

    def entries_and_problems(self, reuse: dict | None = None) -> tuple[list[Entry], list[tuple[str, str]]]:
        """Every readable entry, and (id, why) for each stored row that cannot be read. ``reuse``
        ({(id, revision): Entry}, refilled in place): only the rows added or changed since that call
        (a trigger counts each row's updates) are read and parsed."""
        entries, problems, parsed = [], [], {}
        for key, row in self._keyed_rows(reuse):
            try:
                entries.append(reuse[key] if reuse and key in reuse else self._entry(row))
                parsed[key] = entries[-1]
            except (ValueError, TypeError, UnicodeError, RecursionError) as exc:
                problems.append((ascii(row[0]), f"unreadable stored row: {type(exc).__name__}"))
        if reuse is not None:
            reuse.clear()
            reuse.update(parsed)
        return entries, problems

    def _keyed_rows(self, reuse: dict | None) -> list[tuple]:
        """(key, row) in board order; the row is None where ``reuse`` holds its key."""
        if reuse is None:
            return [(None, row) for row in self._rows()]
        with self._lock:
            keys = [tuple(k) for k in self._conn.execute("SELECT id, revision FROM submissions ORDER BY submitted_at, id")]
        changed, rows = [k[0] for k in keys if k not in reuse], {}
        for i in range(0, len(changed), 500):
            part = changed[i:i + 500]
            rows.update((r[0], r) for r in self._rows(f"WHERE id IN ({', '.join('?' * len(part))})", tuple(part)))
        return [(k, rows.get(k[0])) for k in keys if k in reuse or k[0] in rows]  # deleted meanwhile: gone

    def entries(self) -> list[Entry]:
        return self.entries_and_problems()[0]

    def get(self, entry_id: str) -> Entry | None:
        rows = self._rows("WHERE id = ?", (entry_id,))
        try:
            return self._entry(rows[0]) if rows else None
        except (ValueError, TypeError, UnicodeError, RecursionError):
            return None

    def quarantine_unreadable(self) -> list[tuple[str, str]]:
        """Move every row that cannot be read into ``quarantine`` (kept for a maintainer, off the board)."""
        moved = []
        for row in self._rows():
            try:
                self._entry(row)
            except (ValueError, TypeError, UnicodeError, RecursionError) as exc:
                reason = f"unreadable stored row: {type(exc).__name__}: {ascii(str(exc))[:200]}"
                with self._transaction() as conn:
                    blob = conn.execute("SELECT archive FROM bundles WHERE submission_id = ?", (row[0],)).fetchone()
                    conn.execute("INSERT OR REPLACE INTO quarantine VALUES (?, ?, ?, ?)",
                                 (row[0], reason, json.dumps([ascii(str(v)) for v in row]), blob[0] if blob else None))
                    conn.execute("DELETE FROM bundles WHERE submission_id = ?", (row[0],))
                    conn.execute("DELETE FROM submissions WHERE id = ?", (row[0],))
                moved.append((ascii(row[0]), reason))
        return moved

    def missing_digests(self, version: int) -> list[str]:
        """Ids of entries whose digests are missing or of an older digest version than ``version``."""
        with self._lock:
            return [r[0] for r in self._conn.execute(
                "SELECT id FROM submissions WHERE measurement_sha256 IS NULL OR digest_version IS NULL "
                "OR digest_version < ?", (version,))]

    def set_digests(self, entry_id: str, measurement_sha256: str, tokens_sha256: str,
                    version: int | None = None) -> str | None:
        """Record an older entry's digests; returns the id of an entry already holding the measurement."""
        twin = self.has_measurement(measurement_sha256)
        if twin and twin != entry_id:
            return twin
        with self._transaction() as conn:
            conn.execute("UPDATE submissions SET measurement_sha256 = ?, tokens_sha256 = ?, digest_version = ? "
                         "WHERE id = ?", (measurement_sha256, tokens_sha256, version, entry_id))
        return None

    def set_trust(self, entry_id: str, trust: str, verification: dict, runs: bytes | None = None) -> None:
        """Change an entry's trust level (with the verification record and the packed runs it was
        made with, ``runs``) and queue it for the Hub."""
        if trust not in TRUST_LEVELS:
            raise ValueError(f"trust must be one of {TRUST_LEVELS}")
        with self._transaction() as conn:
            conn.execute("UPDATE submissions SET trust = ?, verification_json = ? WHERE id = ?",
                         (trust, json.dumps(verification, sort_keys=True, allow_nan=False), entry_id))
            if runs is not None:
                conn.execute("INSERT OR REPLACE INTO verifications VALUES (?, ?)", (entry_id, sqlite3.Binary(runs)))
            self._enqueue(conn, entry_id, with_bundle=False)

    def adopt(self, entry_id: str, submitted_at: str, trust: str, verification: dict | None) -> None:
        """Give an entry the date, trust level and verification of the copy of the same measurement
        the Hub dataset holds already (:meth:`speedbench.leaderboard.sync.MirrorSync.push_due`)."""
        if trust not in TRUST_LEVELS:
            raise ValueError(f"trust must be one of {TRUST_LEVELS}")
        with self._transaction() as conn:
            conn.execute("UPDATE submissions SET submitted_at = ?, trust = ?, verification_json = ? WHERE id = ?",
                         (submitted_at, trust,
                          json.dumps(verification, sort_keys=True, allow_nan=False) if verification else None,
                          entry_id))

    # ---- the outbox: entries whose current state has not reached the Hub dataset yet -------
    @staticmethod
    def _enqueue(conn: sqlite3.Connection, entry_id: str, with_bundle: bool) -> None:
        """Queue an entry (with its bundle when it has never been pushed); a queued one stays as queued."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conn.execute("INSERT INTO outbox (entry_id, queued_at, with_bundle) VALUES (?, ?, ?) "
                     "ON CONFLICT(entry_id) DO UPDATE SET next_attempt = 0", (entry_id, now, int(with_bundle)))

    def outbox(self, due_before: float | None = None) -> list[tuple[str, int, str | None, bool]]:
        """(entry id, attempts so far, last error, with bundle) of queued entries (due by ``due_before``),
        oldest first."""
        where, args = ("WHERE next_attempt <= ?", (due_before,)) if due_before is not None else ("", ())
        with self._lock:
            rows = self._conn.execute(f"SELECT entry_id, attempts, last_error, with_bundle FROM outbox {where} "
                                      "ORDER BY queued_at, entry_id", args).fetchall()
        return [(r[0], r[1], r[2], bool(r[3])) for r in rows]

    def next_outbox_attempt(self) -> float | None:
        with self._lock:
            row = self._conn.execute("SELECT MIN(next_attempt) FROM outbox").fetchone()
        return row[0]

    def outbox_done(self, entry_id: str, state: str) -> None:
        """The entry reached the Hub as it was when ``state`` was read (:meth:`state_token`); a change
        since (a verification) keeps it queued, without its bundle (which is there now)."""
        with self._transaction() as conn:
            row = conn.execute(f"SELECT {_STATE_COLUMNS} FROM submissions WHERE id = ?", (entry_id,)).fetchone()
            if row is None or _state(row) == state:
                conn.execute("DELETE FROM outbox WHERE entry_id = ?", (entry_id,))
            else:
                conn.execute("UPDATE outbox SET with_bundle = 0, next_attempt = 0 WHERE entry_id = ?", (entry_id,))

    def outbox_failed(self, entry_id: str, error: str, next_attempt: float) -> None:
        with self._transaction() as conn:
            conn.execute("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt = ? "
                         "WHERE entry_id = ?", (error[:500], next_attempt, entry_id))

    def state_token(self, entry_id: str) -> str:
        """What the Hub copy must match: the entry's trust and verification as stored now."""
        with self._lock:
            row = self._conn.execute(f"SELECT {_STATE_COLUMNS} FROM submissions WHERE id = ?", (entry_id,)).fetchone()
        return _state(row) if row else ""

    def ids(self) -> set[str]:
        """Every entry id, stored or quarantined (restore never brings a quarantined one back)."""
        with self._lock:
            stored = {r[0] for r in self._conn.execute("SELECT id FROM submissions")}
            return stored | {r[0] for r in self._conn.execute("SELECT id FROM quarantine")}

    def archive(self, entry_id: str, table: str = "bundles") -> bytes | None:
        """The entry's raw bundle (``table="verifications"``: its verification's packed runs)."""
        key = "entry_id" if table == "verifications" else "submission_id"
        with self._lock:
            row = self._conn.execute(f"SELECT archive FROM {table} WHERE {key} = ?", (entry_id,)).fetchone()
        return bytes(row[0]) if row else None

    def known_names(self) -> set[str]:
        """Every model and drafter name on the board (the ids a look-alike name is compared with)."""
        with self._lock:
            rows = self._conn.execute("SELECT json_extract(metadata_json, '$.model'), "
                                      "json_extract(metadata_json, '$.drafter') FROM submissions").fetchall()
        return {name for row in rows for name in row if isinstance(name, str)}

    def count(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]

    def snapshot(self) -> list[tuple]:
        """Every row of both tables, for tests that check a rejection left the store unchanged."""
        with self._lock:
            subs = self._conn.execute("SELECT * FROM submissions ORDER BY id").fetchall()
            subs += self._conn.execute("SELECT id, reason FROM quarantine ORDER BY id").fetchall()
            blobs = self._conn.execute("SELECT submission_id, length(archive) FROM bundles ORDER BY 1").fetchall()
        return subs + blobs

    def rebuild(self, recompute: Callable[[bytes], tuple[dict, str]]) -> int:
        """Recompute every entry's metrics from its stored raw bundle; returns how many changed."""
        changed = 0
        self.rebuild_failures: list[tuple[str, str]] = []
        for entry in self.entries():
            try:
                metrics, version = recompute(self.archive(entry.id))
            except BundleRejected as exc:  # the stricter checks of today refuse an old bundle: keep its figures
                self.rebuild_failures.append((entry.id, str(exc)))
                continue
            if metrics != entry.metrics or version != entry.metrics_version:
                with self._transaction() as conn:
                    conn.execute("UPDATE submissions SET metrics_json = ?, metrics_version = ? WHERE id = ?",
                                 (json.dumps(metrics, sort_keys=True, allow_nan=False), version, entry.id))
                changed += 1
        return changed
