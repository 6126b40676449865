"""The tables of the leaderboard's SQLite store (:mod:`.store`): submissions, their raw bundles,
the verifications' packed runs, the outbox to the Hub dataset and the quarantine."""

# Columns added in store version 2 (ALTER TABLE on an older store): the measurement digest
# (duplicates), the token digest, trust status, plausibility warnings, the verification record;
# since issue 32 the row's revision.
V2_COLUMNS = (("measurement_sha256", "TEXT"), ("tokens_sha256", "TEXT"),
              ("trust", "TEXT NOT NULL DEFAULT 'self-reported'"), ("warnings_json", "TEXT NOT NULL DEFAULT '[]'"),
              ("verification_json", "TEXT"), ("digest_version", "INTEGER"),
              ("revision", "INTEGER NOT NULL DEFAULT 0"))
# Each update of an entry's row counts in its ``revision`` (whatever process or code made it): the
# board's cached rows are read again only for rows whose (id, revision) changed. SQLite's
# recursive_triggers is off, so the trigger's own update does not fire it again.
REVISION_TRIGGER = """CREATE TRIGGER IF NOT EXISTS submissions_revision AFTER UPDATE ON submissions
BEGIN UPDATE submissions SET revision = revision + 1 WHERE id = NEW.id; END"""
ENTRY_COLUMNS = ("id, bundle_sha256, archive_sha256, submitted_at, schema_version, metadata_json, metrics_json, "
                 "metrics_version, trust, warnings_json, verification_json")

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS outbox (
    entry_id     TEXT PRIMARY KEY,
    queued_at    TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL DEFAULT 0,
    last_error   TEXT,
    with_bundle  INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS verifications (
    entry_id TEXT PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
    archive  BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantine (
    id          TEXT PRIMARY KEY,
    reason      TEXT NOT NULL,
    row_json    TEXT NOT NULL,
    archive     BLOB
);
"""
