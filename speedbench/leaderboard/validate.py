"""The whole submission check: archive bytes in, a stored entry (or a clear rejection) out.

Order of checks (the first failure is the message the submitter sees; each names its rule):

1. the archive: size, format, gzip trailer, member names and types (:mod:`.archive`);
2. ``submission.json``: schema version, metadata, plain text, listed runs (:mod:`.schema`);
3. no member outside the listed runs, nothing but the run files in a run; each run's manifest
   and records, line by line, held to the record rules of :mod:`speedbench.analysis.consistency`
   (:mod:`.runs`);
4. as each run streams in (:class:`_StreamChecks`): its manifest's engine is the metadata's and
   its dataset build is known; each (load point, question, turn) is answered once, every record
   is a row of the declared config and its statistics name the claimed engine; then, per run:
   it covers the config, prompt lengths are what one real tokenizer gives for its ISL bucket
   (:mod:`.isl`), acceptance is not uniformly perfect, the client kept up, no run twice, a
   baseline is not an SD run;
5. model and drafter names that only look like known ids (:mod:`.names`); the same measurement
   already on the board (:mod:`.canonical`, not the bytes);
6. every metric recomputed from the raw records (:mod:`.recompute`); no speedup above K + 1;
   at temperature 0, SD outputs compared with the baseline's token by token (:mod:`.lossless`, a flag);
7. one transaction writes the entry, its plausibility warnings (:mod:`.plausibility`) and its
   raw archive (:mod:`.store`) and its outbox row (the Hub dataset copy, pushed in the background by
   :mod:`.sync`).

Everything before step 7 is read-only, so a rejection leaves the store exactly as it was.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime

from speedbench.analysis.consistency import check_acceptance_plausible, check_client_lag
from speedbench.analysis.coverage_rules import check_category_coverage, check_coverage
from speedbench.analysis.supersession import SupersessionTracker
from speedbench.leaderboard import canonical, plausibility
from speedbench.leaderboard.isl import check_isl
from speedbench.leaderboard.load_points import check_achieved
from speedbench.leaderboard.names import KNOWN_IDS, check_name
from speedbench.leaderboard.archive import ArchiveLimits, check_member_name, content_hash, read_archive
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
from speedbench.leaderboard.strict_json import loads_strict
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.metrics.results import to_jsonable
from speedbench.metrics.validation import MetricInputError
from speedbench.records import TurnRecord
from speedbench.analysis.run_folder import RunFolder

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


def _read(data: bytes, limits: ArchiveLimits | None, caps: RunCaps, known_builds: KnownBuilds | None = None):
    """Steps 1-3, and with ``known_builds`` the checks of step 4 that need only a run's manifest or
    one record, made while the run streams in (:class:`_StreamChecks`)."""
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
    read = []
    for ref in refs:
        checks = _StreamChecks(ref.path, metadata if known_builds is not None else None, known_builds)
        read.append(read_run(ref.path, ref.role, files, metadata.draft_length, limits=limits, caps=caps,
                             on_record=checks.record, on_manifest=checks.manifest))
    return metadata, read, files


class _StreamChecks:
    """The checks one run needs no more than its manifest or one record for, made as it streams in
    (before the next record is parsed), so a hostile upload stops at its first bad line instead of
    after a full parse (each rejection names the member and line):

    - at the manifest: the engine is the metadata's (``run.engine``), the dataset build and config
      are known (``build.unknown``, ``build.config_mismatch``);
    - at each measured record: each (load point, question, turn) is answered once
      (``record.duplicate_request``: an upload of one prompt repeated 48,000 times stops at its
      second record); at each measured, successful one: it is a row of the declared config
      (``build.unknown_question``, ``build.category_mismatch``) and its engine statistics name the
      claimed engine (``claim.engine_source``: ``vllm.metrics``, ``sglang.meta_info``,
      ``trtllm.perf_metrics``, ``llamacpp.timings``).

    Without ``metadata`` and ``known_builds`` (re-reading a stored bundle) only the first.
    """

    def __init__(self, path: str, metadata: SubmissionMetadata | None, known_builds: KnownBuilds | None):
        self.path, self.metadata, self.known_builds = path, metadata, known_builds
        self.build = self.config = None
        self.seen = SupersessionTracker()  # (point, question, turn): again only as a --retry-errors rerun

    def manifest(self, manifest, where: str) -> None:
        if self.metadata is not None and manifest.engine.lower() != self.metadata.engine:
            raise BundleRejected(f"run was measured with engine {shown(manifest.engine)} but metadata.engine says "
                                 f"{self.metadata.engine!r}", rule="run.engine", where=where, field="engine")
        if self.known_builds is not None:
            self.build, self.config = self.known_builds.config_of(self.path, manifest.dataset_config_sha256,
                                                                  manifest.dataset_config)

    def record(self, record: TurnRecord, where: str) -> None:
        if record.warmup:
            return
        key = (record.run_point, record.question_id, record.turn_index)
        if self.seen.problem(key, record.supersedes, record.ok):
            raise BundleRejected(f"load point {shown(key[0])} answers question {shown(key[1])} turn {key[2]} twice",
                                 rule="record.duplicate_request", where=where, field="question_id")
        if not record.ok:
            return
        if self.config is not None:
            KnownBuilds.check_question(where, self.build, self.config, record.question_id, record.category)
        source = record.engine_stats.source if record.engine_stats is not None else ""
        if self.metadata is not None and source and source.split(".", 1)[0] != self.metadata.engine:
            raise BundleRejected(f"{shown(record.record_key)}: its engine statistics come from {shown(source)}, "
                                 f"not from {self.metadata.engine!r} as claimed", rule="claim.engine_source",
                                 where=where, field="engine_stats.source")


def _check_run(data: RunFolder, metadata: SubmissionMetadata, known_builds: KnownBuilds) -> None:
    """The checks of step 4 that need a whole run (its manifest and records were checked as they streamed in)."""
    _, config = known_builds.config_of(data.path, data.manifest.dataset_config_sha256, data.dataset_config)
    checks = [check_coverage(data.measured, len(config.questions), questions=config.questions),
              check_category_coverage(data.measured, config.questions),
              check_acceptance_plausible(data.records, metadata.draft_length) if data.role == "sd" else [],
              check_client_lag(data.records)]
    for violations in checks:
        if violations:
            first = violations[0]
            raise BundleRejected(f"{shown(first.request)}: {first.detail}", rule=first.rule,
                                 where=f"{data.path}/records.jsonl", field=first.field)


def _check_distinct_runs(runs: list[RunFolder], digests: list) -> None:
    """The same records twice in one bundle: as baseline and SD run, or as two runs of one role."""
    seen: dict[str, RunFolder] = {}
    for run, digest in zip(runs, digests):
        twin = seen.get(digest.roleless)
        if twin is not None:
            if {twin.role, run.role} == {"sd", "baseline"}:
                sd, base = (twin, run) if twin.role == "sd" else (run, twin)
                raise BundleRejected(f"the baseline run holds the same records as the SD run {shown(sd.path)}",
                                     rule="baseline.same_as_sd", where=f"{base.path}/records.jsonl")
            raise BundleRejected(f"the same records as the run {shown(twin.path)}", rule="bundle.same_run_twice",
                                 where=f"{run.path}/records.jsonl")
        seen[digest.roleless] = run


def parse_bundle(data: bytes, known_builds: KnownBuilds, limits: ArchiveLimits | None = None,
                 caps: RunCaps = DEFAULT_CAPS) -> ValidatedBundle:
    """Steps 1-4: a fully checked bundle (no metrics yet), or :class:`BundleRejected`."""
    metadata, runs, files = _read(data, limits, caps, known_builds)
    for run in runs:
        _check_run(run, metadata, known_builds)
    check_isl(runs)
    digests = [canonical.run_digests(r) for r in runs]
    _check_distinct_runs(runs, digests)
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
    check_achieved(metrics.get("points", []))  # point.achieved_above_requested (.load_points)
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
    warnings += plausibility.degenerate_warnings(bundle.runs)
    warnings += losslessness_warnings(metrics.get("losslessness"))
    twin = store.has_tokens(bundle.tokens_sha256) if store is not None else None
    if twin:
        warnings.append({"code": "duplicate.tokens", "message": f"the same token streams as entry {twin}"})
    return warnings


def check_names(metadata: SubmissionMetadata, store: LeaderboardStore | None) -> None:
    """Model and drafter names against the known ids and the names already on the board (:mod:`.names`)."""
    known = set(KNOWN_IDS) | (store.known_names() if store is not None else set())
    check_name(metadata.model, "model", known)
    check_name(metadata.drafter, "drafter", known)


def duplicate_of(store: LeaderboardStore, measurement_sha256: str) -> None:
    existing = store.has_measurement(measurement_sha256)
    if existing:
        raise BundleRejected(
            f"duplicate submission: this measurement (digest {measurement_sha256[:16]}...) is already on the "
            f"board as entry {existing}", rule="duplicate.measurement")


def store_entry(bundle: ValidatedBundle, data: bytes, metrics: dict, store: LeaderboardStore,
                submitted_at: str | None = None) -> Entry:
    """Step 7: the entry, its warnings, raw archive and outbox row in one transaction."""
    return store.add(bundle_sha256=bundle.bundle_sha256, archive_sha256=bundle.archive_sha256, archive=data,
                     schema_version=bundle.schema_version, metadata=bundle.metadata.to_dict(), metrics=metrics,
                     metrics_version=METRICS_VERSION, submitted_at=submitted_at,
                     measurement_sha256=bundle.measurement_sha256, tokens_sha256=bundle.tokens_sha256,
                     warnings=entry_warnings(bundle, metrics, store), digest_version=canonical.DIGEST_VERSION)


def submit_bundle(data: bytes, store: LeaderboardStore, known_builds: KnownBuilds,
                  limits: ArchiveLimits | None = None, submitted_at: str | None = None) -> Entry:
    """Validate, recompute and store one uploaded bundle; returns the new entry (queued in the
    store's outbox for the Hub dataset in the same transaction, :mod:`.sync`). The Space runs the
    same steps under its admission control (:func:`speedbench.leaderboard.admission.submit`)."""
    bundle = parse_bundle(data, known_builds, limits)
    check_names(bundle.metadata, store)
    duplicate_of(store, bundle.measurement_sha256)
    metrics = compute_entry_metrics(bundle)
    return store_entry(bundle, data, metrics, store, submitted_at)


ISO_DATE = "%Y-%m-%dT%H:%M:%SZ"


def iso_date(value) -> str | None:
    """``value`` when it is a date as the board writes them (``2026-11-02T00:00:00Z``), else None."""
    if not isinstance(value, str) or len(value) != 20:
        return None
    try:
        return value if datetime.strptime(value, ISO_DATE).strftime(ISO_DATE) == value else None
    except ValueError:
        return None


def recompute_from_archive(data: bytes, known_builds: KnownBuilds) -> tuple[dict, str]:
    """Metrics of a stored archive (for :meth:`LeaderboardStore.rebuild`)."""
    return compute_entry_metrics(parse_bundle(data, known_builds, STORED_LIMITS)), METRICS_VERSION


def backfill_digests(store: LeaderboardStore, known_builds: KnownBuilds) -> list[str]:
    """Measurement and token digests for entries stored before they existed, so a resubmission of
    one is recognised; returns a line per entry that could not be filled (a twin, or a bundle the
    checks of today refuse)."""
    problems = []
    for entry_id in store.missing_digests(canonical.DIGEST_VERSION):
        try:
            bundle = parse_bundle(store.archive(entry_id), known_builds, STORED_LIMITS)
        except BundleRejected as exc:
            problems.append(f"{entry_id}: not filled, its bundle no longer passes: {exc}")
            continue
        twin = store.set_digests(entry_id, bundle.measurement_sha256, bundle.tokens_sha256, canonical.DIGEST_VERSION)
        if twin:
            problems.append(f"{entry_id}: the same measurement as entry {twin}")
    return problems
