"""The whole submission check: archive bytes in, a stored entry (or a clear rejection) out.

Order of checks (the first failure is the message the submitter sees; each names its rule):

1. the archive: size, format, gzip trailer, member names and types (:mod:`.archive`);
2. ``submission.json``: schema version, metadata, plain text, listed runs (:mod:`.schema`);
3. no member outside the listed runs, nothing but the run files in a run; each run's manifest
   and records, line by line, held to the record rules of :mod:`speedbench.consistency`
   (:mod:`.runs`);
4. each run's engine agrees with the metadata; its dataset build is known, every record is a
   row of the declared config, the run covers the config, prompt lengths fit its ISL bucket,
   acceptance is not uniformly perfect, a baseline is not an SD run (:mod:`.known_builds`);
5. the same measurement already on the board (:mod:`.canonical`, not the bytes);
6. every metric recomputed from the raw records (:mod:`.recompute`); no speedup above K + 1;
   at temperature 0, SD outputs compared with the baseline's token by token (:mod:`.lossless`, a flag);
7. one transaction writes the entry, its plausibility warnings (:mod:`.plausibility`) and its
   raw archive (:mod:`.store`), then the optional mirror.

Everything before step 7 is read-only, so a rejection leaves the store exactly as it was.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from speedbench.consistency import check_acceptance_plausible, check_client_lag, check_coverage, check_prompt_lengths
from speedbench.leaderboard import canonical, plausibility
from speedbench.leaderboard.archive import ArchiveLimits, check_member_name, content_hash, loads_strict, read_archive
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.lossless import bundle_losslessness, losslessness_warnings
from speedbench.leaderboard.phases import bundle_phases
from speedbench.leaderboard.recompute import METRICS_VERSION, recompute_metrics
from speedbench.leaderboard.runs import DEFAULT_CAPS, RunCaps, read_run
from speedbench.leaderboard.schema import (
    BUNDLE_SCHEMA_VERSION,
    SUBMISSION_FILE,
    BundleRejected,
    SubmissionMetadata,
    parse_submission,
    shown,
)
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.metrics.results import to_jsonable
from speedbench.metrics.validation import MetricInputError
from speedbench.run_folder import RunFolder
from speedbench.schema import THROUGHPUT_BUCKETS

log = logging.getLogger(__name__)
# Bundles already in the store passed the upload limits once; re-reading them is not capped.
STORED_LIMITS = ArchiveLimits(max_archive_bytes=2**40, max_total_bytes=2**40, max_members=10**6)
MAX_SUBMISSION_BYTES = 1024 * 1024


@dataclass
class ValidatedBundle:
    metadata: SubmissionMetadata
    runs: list[RunFolder]
    files: dict  # not kept by parse_bundle (see there)
    bundle_sha256: str  # raw content hash (reference only)
    archive_sha256: str
    measurement_sha256: str = ""  # what was measured: the duplicate check
    tokens_sha256: str = ""
    schema_version: int = BUNDLE_SCHEMA_VERSION


def read_runs(data: bytes, limits: ArchiveLimits | None = None,
              caps: RunCaps = DEFAULT_CAPS) -> tuple[SubmissionMetadata, list[RunFolder], dict]:
    """Steps 1-3: the metadata and parsed runs of a bundle (also used to re-read stored bundles)."""
    return _read(data, limits, caps)


def _read(data: bytes, limits: ArchiveLimits | None, caps: RunCaps):
    files = read_archive(data, limits)
    if SUBMISSION_FILE not in files:
        raise BundleRejected(f"bundle has no {SUBMISSION_FILE} at its top level (pack it with 'speedbench submit')",
                             rule="submission.missing")
    if len(files[SUBMISSION_FILE]) > MAX_SUBMISSION_BYTES:
        raise BundleRejected("larger than 1 MiB", rule="caps.json_size", where=SUBMISSION_FILE)
    metadata, refs = parse_submission(loads_strict(files[SUBMISSION_FILE], SUBMISSION_FILE))
    listed = {SUBMISSION_FILE}
    for ref in refs:
        check_member_name(ref.path)
        listed |= {name for name in files if name.startswith(ref.path + "/")}
    extra = sorted(set(files) - listed)
    if extra:
        raise BundleRejected(f"bundle member {shown(extra[0])} is not part of any run listed in {SUBMISSION_FILE}",
                             rule="archive.unexpected_member")
    read = [read_run(ref.path, ref.role, files, metadata.draft_length, limits=limits, caps=caps) for ref in refs]
    return metadata, read, files


def _check_run(data: RunFolder, metadata: SubmissionMetadata, known_builds: KnownBuilds) -> None:
    if data.manifest.engine.lower() != metadata.engine:
        raise BundleRejected(f"run was measured with engine {shown(data.manifest.engine)} "
                             f"but metadata.engine says {metadata.engine!r}", rule="run.engine",
                             where=f"{data.path}/manifest.json", field="engine")
    build = known_builds.check_run(data.path, data.manifest.dataset_config_sha256, data.dataset_config,
                                   ((r.question_id, r.category) for r in data.records))
    expected = len(build.configs[data.dataset_config].questions)
    checks = [check_coverage(data.measured, expected),
              check_prompt_lengths(data.records, THROUGHPUT_BUCKETS.get(data.isl_bucket or "")),
              check_acceptance_plausible(data.records, metadata.draft_length) if data.role == "sd" else [],
              check_client_lag(data.records)]
    for violations in checks:
        if violations:
            first = violations[0]
            raise BundleRejected(f"{shown(first.request)}: {first.detail}", rule=first.rule,
                                 where=f"{data.path}/records.jsonl", field=first.field)


def parse_bundle(data: bytes, known_builds: KnownBuilds, limits: ArchiveLimits | None = None,
                 caps: RunCaps = DEFAULT_CAPS) -> ValidatedBundle:
    """Steps 1-4: a fully checked bundle (no metrics yet), or :class:`BundleRejected`."""
    metadata, runs, files = _read(data, limits, caps)
    for run in runs:
        _check_run(run, metadata, known_builds)
    digests = [canonical.run_digests(r) for r in runs]
    sd_forms = {d.roleless: r.path for r, d in zip(runs, digests) if r.role == "sd"}
    for run, digest in zip(runs, digests):
        twin = sd_forms.get(digest.roleless) if run.role == "baseline" else None
        if twin:
            raise BundleRejected(f"the baseline run holds the same records as the SD run {shown(twin)}",
                                 rule="baseline.same_as_sd", where=f"{run.path}/records.jsonl")
    # files={}: the members' buffer (up to the unpacked cap) is freed before the metrics run
    return ValidatedBundle(metadata=metadata, runs=runs, files={},
                           bundle_sha256=content_hash(files, exclude=(SUBMISSION_FILE,)),
                           archive_sha256=hashlib.sha256(data).hexdigest(),
                           measurement_sha256=canonical.measurement_digest(digests),
                           tokens_sha256=canonical.measurement_digest(digests, with_times=False))


def compute_entry_metrics(bundle: ValidatedBundle) -> dict:
    """Step 6; a record the metrics core refuses is a rejection, not a crash."""
    try:
        metrics = recompute_metrics(bundle.runs, bundle.metadata.draft_length)
    except MetricInputError as exc:
        raise BundleRejected(f"records rejected by the metrics core: {exc}", rule="metrics.input") from None
    # flagged, never rejected (speedbench.leaderboard.lossless)
    metrics["losslessness"] = to_jsonable(bundle_losslessness(bundle.runs, bundle.metadata.temperature))
    phases = bundle_phases(bundle.runs, bundle.metadata)  # only when submitted (speedbench.leaderboard.phases)
    if phases is not None:
        metrics["phases"] = phases
    limit = bundle.metadata.draft_length + 1
    for speedup in metrics.get("speedup", []):
        if (speedup.get("speedup_measured") or 0) > limit:
            raise BundleRejected(
                f"measured speedup {speedup['speedup_measured']:.2f} at {speedup['isl']} c={speedup['concurrency']} "
                f"exceeds K + 1 = {limit}, which no verification step can emit", rule="speedup.above_k_plus_1",
                where=str(speedup.get("dataset_config")))
    return metrics


def entry_warnings(bundle: ValidatedBundle, metrics: dict, store: LeaderboardStore | None = None) -> list[dict]:
    warnings = plausibility.greedy_warnings(bundle.runs, bundle.metadata.temperature)
    warnings += plausibility.metric_warnings(bundle.metadata, metrics)
    warnings += losslessness_warnings(metrics.get("losslessness"))
    twin = store.has_tokens(bundle.tokens_sha256) if store is not None else None
    if twin:
        warnings.append({"code": "duplicate.tokens", "message": f"the same token streams as entry {twin}"})
    return warnings


def submit_bundle(data: bytes, store: LeaderboardStore, known_builds: KnownBuilds,
                  limits: ArchiveLimits | None = None, mirror=None, submitted_at: str | None = None) -> Entry:
    """Validate, recompute and store one uploaded bundle; returns the new entry."""
    bundle = parse_bundle(data, known_builds, limits)
    existing = store.has_measurement(bundle.measurement_sha256)
    if existing:
        raise BundleRejected(
            f"duplicate submission: this measurement (digest {bundle.measurement_sha256[:16]}...) is already on the "
            f"board as entry {existing}", rule="duplicate.measurement")
    metrics = compute_entry_metrics(bundle)
    entry = store.add(bundle_sha256=bundle.bundle_sha256, archive_sha256=bundle.archive_sha256, archive=data,
                      schema_version=bundle.schema_version, metadata=bundle.metadata.to_dict(), metrics=metrics,
                      metrics_version=METRICS_VERSION, submitted_at=submitted_at,
                      measurement_sha256=bundle.measurement_sha256, tokens_sha256=bundle.tokens_sha256,
                      warnings=entry_warnings(bundle, metrics, store))
    if mirror is not None:
        try:
            mirror.push(entry, data)
        except Exception as exc:  # the local store is the source of truth; the mirror catches up later
            log.warning("mirror push of %s failed: %s", entry.id, exc)
    return entry


def recompute_from_archive(data: bytes, known_builds: KnownBuilds) -> tuple[dict, str]:
    """Metrics of a stored archive (for :meth:`LeaderboardStore.rebuild`)."""
    return compute_entry_metrics(parse_bundle(data, known_builds, STORED_LIMITS)), METRICS_VERSION


def backfill_digests(store: LeaderboardStore, known_builds: KnownBuilds) -> list[str]:
    """Measurement and token digests for entries stored before they existed, so a resubmission of
    one is recognised; returns a line per entry that could not be filled (a twin, or a bundle the
    checks of today refuse)."""
    problems = []
    for entry_id in store.missing_digests():
        try:
            bundle = parse_bundle(store.archive(entry_id), known_builds, STORED_LIMITS)
        except BundleRejected as exc:
            problems.append(f"{entry_id}: not filled, its bundle no longer passes: {exc}")
            continue
        twin = store.set_digests(entry_id, bundle.measurement_sha256, bundle.tokens_sha256)
        if twin:
            problems.append(f"{entry_id}: the same measurement as entry {twin}")
    return problems
