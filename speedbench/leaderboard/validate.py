"""The whole submission check: archive bytes in, a stored entry (or a clear rejection) out.

Order of checks (the first failure is the message the submitter sees):

1. the archive: size, format, member names and types (:mod:`.archive`);
2. ``submission.json``: schema version, metadata, listed runs (:mod:`.schema`);
3. no member outside the listed runs; each run's manifest and records (:mod:`.records_adapter`);
4. each run's engine agrees with the metadata; its dataset build is known and every record is
   a row of the declared config (:mod:`.known_builds`);
5. duplicate bundle (same content hash) already on the board;
6. every metric recomputed from the raw records (:mod:`.recompute`);
7. one transaction writes the entry and its raw archive (:mod:`.store`), then the optional mirror.

Everything before step 7 is read-only, so a rejection leaves the store exactly as it was.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from speedbench.leaderboard.archive import ArchiveLimits, check_member_name, content_hash, loads_strict, read_archive
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.records_adapter import RunData, parse_run
from speedbench.leaderboard.recompute import METRICS_VERSION, recompute_metrics
from speedbench.leaderboard.schema import (
    BUNDLE_SCHEMA_VERSION,
    SUBMISSION_FILE,
    BundleRejected,
    SubmissionMetadata,
    parse_submission,
)
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.metrics.validation import MetricInputError

log = logging.getLogger(__name__)
# Bundles already in the store passed the upload limits once; re-reading them is not capped.
STORED_LIMITS = ArchiveLimits(max_archive_bytes=2**40, max_total_bytes=2**40, max_members=10**6)


@dataclass
class ValidatedBundle:
    metadata: SubmissionMetadata
    runs: list[RunData]
    files: dict[str, bytes]
    bundle_sha256: str
    archive_sha256: str
    schema_version: int = BUNDLE_SCHEMA_VERSION


def read_runs(data: bytes, limits: ArchiveLimits | None = None) -> tuple[SubmissionMetadata, list[RunData], dict]:
    """Steps 1-3: the metadata and parsed runs of a bundle (also used to re-read stored bundles)."""
    files = read_archive(data, limits)
    if SUBMISSION_FILE not in files:
        raise BundleRejected(f"bundle has no {SUBMISSION_FILE} at its top level (pack it with 'speedbench submit')")
    metadata, refs = parse_submission(loads_strict(files[SUBMISSION_FILE], SUBMISSION_FILE))
    listed = {SUBMISSION_FILE}
    for ref in refs:
        check_member_name(ref.path)
        listed |= {name for name in files if name.startswith(ref.path + "/")}
    extra = sorted(set(files) - listed)
    if extra:
        raise BundleRejected(f"bundle member {extra[0]!r} is not part of any run listed in {SUBMISSION_FILE}")
    return metadata, [parse_run(ref.path, ref.role, files) for ref in refs], files


def parse_bundle(data: bytes, known_builds: KnownBuilds, limits: ArchiveLimits | None = None) -> ValidatedBundle:
    """Steps 1-4: a fully checked bundle (no metrics yet), or :class:`BundleRejected`."""
    metadata, runs, files = read_runs(data, limits)
    for run in runs:
        if run.manifest.engine.lower() != metadata.engine:
            raise BundleRejected(
                f"{run.path}/manifest.json: run was measured with engine {run.manifest.engine!r} "
                f"but metadata.engine says {metadata.engine!r}")
        known_builds.check_run(run.path, run.manifest.dataset_config_sha256, run.dataset_config,
                               ((r.question_id, r.category) for r in run.records))
    return ValidatedBundle(metadata=metadata, runs=runs, files=files,
                           bundle_sha256=content_hash(files, exclude=(SUBMISSION_FILE,)),
                           archive_sha256=hashlib.sha256(data).hexdigest())


def compute_entry_metrics(bundle: ValidatedBundle) -> dict:
    """Step 6; a record the metrics core refuses is a rejection, not a crash."""
    try:
        return recompute_metrics(bundle.runs, bundle.metadata.draft_length)
    except MetricInputError as exc:
        raise BundleRejected(f"records rejected by the metrics core: {exc}") from None


def submit_bundle(data: bytes, store: LeaderboardStore, known_builds: KnownBuilds,
                  limits: ArchiveLimits | None = None, mirror=None, submitted_at: str | None = None) -> Entry:
    """Validate, recompute and store one uploaded bundle; returns the new entry."""
    bundle = parse_bundle(data, known_builds, limits)
    existing = store.has_bundle(bundle.bundle_sha256)
    if existing:
        raise BundleRejected(
            f"duplicate submission: this bundle (hash {bundle.bundle_sha256[:16]}...) is already on the board "
            f"as entry {existing}")
    metrics = compute_entry_metrics(bundle)
    entry = store.add(bundle_sha256=bundle.bundle_sha256, archive_sha256=bundle.archive_sha256, archive=data,
                      schema_version=bundle.schema_version, metadata=bundle.metadata.to_dict(), metrics=metrics,
                      metrics_version=METRICS_VERSION, submitted_at=submitted_at)
    if mirror is not None:
        try:
            mirror.push(entry, data)
        except Exception as exc:  # the local store is the source of truth; the mirror catches up later
            log.warning("mirror push of %s failed: %s", entry.id, exc)
    return entry


def recompute_from_archive(data: bytes, known_builds: KnownBuilds) -> tuple[dict, str]:
    """Metrics of a stored archive (for :meth:`LeaderboardStore.rebuild`)."""
    return compute_entry_metrics(parse_bundle(data, known_builds, STORED_LIMITS)), METRICS_VERSION
