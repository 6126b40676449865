"""An entry restored from the Hub dataset (:mod:`.sync`): nothing is trusted because it came from the repo.

:func:`restore_bundle` re-validates the bundle with the same checks as an upload and recomputes its
metrics. From the entry document only the date is taken, and only as an ISO date. Trust is never
read from the document: an entry is restored ``verified`` only when its verification re-checks
here (:func:`speedbench.leaderboard.verify.recheck` on the verification's packed runs, stored as
``verifications/<id>.tar.gz``); otherwise it is self-reported with the warning
``restored.verification_unchecked`` saying why.

**Ids.** The board issues ``entry_id_for(measurement digest)``. An entry whose file name is another
well-formed id (``sb-`` + 12 hex digits: one issued under an older digest version, whose
measurement digest is now computed differently, or one a store issued before ids came from the
measurement) is *re-issued* the id of its measurement today, with the warning
``restored.id_reissued`` naming the old id, and queued for the Hub under its new id (the old files
stay there; a later restore finds their measurement on the board and adds nothing). The old id is
never taken: a name in the dataset cannot pick an entry's id. A file name that is not a
well-formed id is never read (:class:`speedbench.leaderboard.mirror.RepoListing`).
"""
from __future__ import annotations

from datetime import datetime, timezone

from speedbench.leaderboard import canonical
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.store import Entry, LeaderboardStore, entry_id_for
from speedbench.leaderboard.validate import (
    ISO_DATE,
    METRICS_VERSION,
    STORED_LIMITS,
    compute_entry_metrics,
    entry_warnings,
    iso_date,
    parse_bundle,
)


def _dated(document: dict | None, bundle) -> tuple[str, list[dict]]:
    """The document's ISO date, else the first measured request's (with a warning saying so)."""
    submitted_at = iso_date((document or {}).get("submitted_at"))
    if submitted_at is not None:
        return submitted_at, []
    first = min(r.started_unix_s for run in bundle.runs for r in run.records)
    what = "without its entry document" if document is None else "whose entry document has no ISO date"
    return datetime.fromtimestamp(first, timezone.utc).strftime(ISO_DATE), [
        {"code": "restored.no_entry_document" if document is None else "restored.no_date",
         "message": f"restored from a bundle {what}: dated by its first request"}]


def restore_bundle(entry_id: str, document: dict | None, data: bytes, store: LeaderboardStore,
                   known_builds: KnownBuilds, verification_runs: bytes | None = None) -> Entry | None:
    """Restore one entry (module docstring); None when its measurement is on the board already
    (an old id's files beside the re-issued entry's)."""
    from speedbench.leaderboard.verify import recheck

    bundle = parse_bundle(data, known_builds, STORED_LIMITS)
    expected = entry_id_for(bundle.measurement_sha256)
    if store.has_measurement(bundle.measurement_sha256) or store.get(expected) is not None:
        return None
    metrics = compute_entry_metrics(bundle)
    submitted_at, warnings = _dated(document, bundle)
    warnings = entry_warnings(bundle, metrics, store) + warnings
    if entry_id != expected:
        warnings.append({"code": "restored.id_reissued",
                         "message": f"the Hub dataset holds this entry as {entry_id}, an id the board no longer "
                                    f"issues for its measurement (an older digest version): re-issued as {expected}"})
    entry = Entry(id=expected, bundle_sha256=bundle.bundle_sha256, archive_sha256=bundle.archive_sha256,
                  submitted_at=submitted_at, schema_version=bundle.schema_version,
                  metadata=bundle.metadata.to_dict(), metrics=metrics, metrics_version=METRICS_VERSION)
    doc = document or {}
    record, why = None, ""
    if doc.get("trust") not in (None, "self-reported"):
        record, why = recheck(entry, bundle, doc.get("verification"), verification_runs, store, known_builds)
    if why:
        warnings.append({"code": "restored.verification_unchecked",
                         "message": f"the Hub copy's document says verified, but {why}: the entry is self-reported "
                                    "until a maintainer verifies it again"})
    return store.add(bundle_sha256=bundle.bundle_sha256, archive_sha256=bundle.archive_sha256, archive=data,
                     schema_version=bundle.schema_version, metadata=entry.metadata, metrics=metrics,
                     metrics_version=METRICS_VERSION, submitted_at=submitted_at,
                     measurement_sha256=bundle.measurement_sha256, tokens_sha256=bundle.tokens_sha256,
                     warnings=warnings, entry_id=expected, trust="verified" if record else "self-reported",
                     verification=record, digest_version=canonical.DIGEST_VERSION, enqueue=entry_id != expected,
                     verification_runs=verification_runs if record else None)
