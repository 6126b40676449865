"""One run folder of a bundle, read by the one run-folder reader under the board's rules.

The board reads a bundle's run with :func:`speedbench.analysis.run_folder.read_run_folder`, the reader the
client's results and the report use, into the same :class:`~speedbench.analysis.run_folder.RunFolder`; what
differs is how strictly the bytes are held (:class:`BundleRules`). A run folder holds exactly the
files ``speedbench run`` writes and the board reads (``RUN_FILES``; anything else is refused).
``records.jsonl`` is parsed one line at a time (:func:`~speedbench.leaderboard.strict_json.iter_jsonl`);
each line is type-checked, turned into a :class:`~speedbench.records.TurnRecord` and held to the
record rules of :mod:`speedbench.analysis.consistency` (the client's own checks) before the next line is
read. Chunk lists are then kept as compact ``array('q')`` (8 bytes a value instead of a Python int
and a pointer), and failed and warmup requests keep no chunks, so a run costs memory in proportion
to what it measured. CPU is bounded by caps on records and load points per run (:class:`RunCaps`).
"""
from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from speedbench.analysis.consistency import DEFAULT_BOUNDS, PhysicalBounds, check_record
from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.load_points import check_label
from speedbench.leaderboard.schema import RUN_FILES, BundleRejected, shown
from speedbench.leaderboard.strict_json import iter_jsonl, loads_strict
from speedbench.metrics.acceptance.draft_length import server_draft_nodes
from speedbench.records import RECORDS_NAME, RunManifest, TurnRecord
from speedbench.analysis.run_folder import ReadRules, RunFolder, read_run_folder
from speedbench.analysis.supersession import SupersessionTracker


@dataclass(frozen=True)
class RunCaps:
    """Per-run caps that bound the CPU one upload can cost: records (request-turns, warmup and
    failed included) and load points; ``manifest.json`` / ``results.json`` are small files."""

    max_records: int = 50_000
    max_points: int = 16
    max_json_bytes: int = 16 * 1024 * 1024


DEFAULT_CAPS = RunCaps()
_INT_FIELDS = ("scheduled_ns", "send_ns", "end_ns", "turn_index", "num_turns", "prompt_tokens", "output_tokens")
_STR_FIELDS = ("record_key", "run_point", "question_id", "category")
MAX_TOKEN_ID = 2**32  # exclusive: no tokenizer comes near; ids are kept as 4-byte unsigned values
_STATS_INTS = ("verify_steps", "draft_tokens", "accepted_tokens", "draft_length", "decode_steps", "drafted_steps",
               "accepted_past_max_tokens")


def _is_int(value) -> bool:
    return type(value) is int


def _reject(detail: str, where: str, field: str, rule: str = "record.type"):
    raise BundleRejected(detail, rule=rule, where=where, field=field)


def check_record_types(data, where: str) -> None:
    """The fields the board reads have the types they must have (values are judged later)."""
    if not isinstance(data, dict):
        _reject("a record must be a JSON object", where, "(record)")
    for name in _STR_FIELDS:
        if not isinstance(data.get(name), str) or not data[name]:
            _reject("must be a non-empty string", where, name)
    for name in _INT_FIELDS:
        if not _is_int(data.get(name)):
            _reject(f"must be an integer, got {shown(data.get(name), 40)}", where, name)
        if data[name] < 0:
            _reject(f"is negative ({data[name]}); times and counts must be >= 0", where, name, "record.negative")
    for name in ("chunk_ns", "chunk_tokens"):
        value = data.get(name, [])
        if not isinstance(value, list) or not set(map(type, value)) <= {int}:  # in C: long lists
            _reject("must be a list of integers", where, name)
    if len(data.get("chunk_ns", [])) != len(data.get("chunk_tokens", [])):
        _reject("chunk_ns and chunk_tokens must have the same length", where, "chunk_tokens", "chunks.lengths")
    for name in ("warmup", "chunks_are_steps"):
        if not isinstance(data.get(name, False), bool):
            _reject("must be true or false", where, name)
    for name in ("error", "finish_reason", "output_text", "error_kind"):
        if data.get(name) is not None and not isinstance(data[name], str):
            _reject("must be a string or null", where, name)
    concurrency = data.get("requested_concurrency")
    if concurrency is not None and (not _is_int(concurrency) or concurrency < 1):
        _reject("must be a positive integer or null", where, "requested_concurrency")
    _check_token_ids_types(data, where)
    started = data.get("started_unix_s")
    if started is not None and (not isinstance(started, (int, float)) or isinstance(started, bool)
                                or not math.isfinite(started) or started < 0):
        _reject("must be a non-negative number", where, "started_unix_s")
    _check_stats_types(data.get("engine_stats"), where)


def _check_token_ids_types(data: dict, where: str) -> None:
    """``output_token_ids``: null or a list of token ids, integers in [0, 2^32) (the losslessness check
    reads them; kept as 4-byte ``array('I')``)."""
    ids = data.get("output_token_ids")
    if ids is not None and (not isinstance(ids, list) or not set(map(type, ids)) <= {int}
                            or (ids and (min(ids) < 0 or max(ids) >= MAX_TOKEN_ID))):
        _reject("must be null or a list of token ids (integers from 0 to 2^32 - 1)", where, "output_token_ids")
    if data.get("output_token_ids_source") is not None and not isinstance(data["output_token_ids_source"], str):
        _reject("must be a string or null", where, "output_token_ids_source")


def _check_stats_types(stats, where: str) -> None:
    if stats is None:
        return
    if not isinstance(stats, dict):
        _reject("engine_stats must be an object or null", where, "engine_stats")
    for name in _STATS_INTS:
        value = stats.get(name)
        if value is not None and (not _is_int(value) or value < 0):
            _reject("must be a non-negative integer or null", where, f"engine_stats.{name}")
    histogram = stats.get("acceptance_histogram")
    if histogram is not None and (not isinstance(histogram, list) or not all(_is_int(v) and v >= 0 for v in histogram)):
        _reject("engine_stats.acceptance_histogram must be a list of non-negative integers", where,
                "engine_stats.acceptance_histogram")
    if not isinstance(stats.get("source", ""), str) or not isinstance(stats.get("exact", True), bool):
        _reject("engine_stats.source must be a string and engine_stats.exact a boolean", where, "engine_stats.source")
    if not isinstance(stats.get("raw", {}), dict):
        _reject("must be an object", where, "engine_stats.raw")


def _compact(record: TurnRecord, keep_chunks: bool) -> TurnRecord:
    record.chunk_ns = array("q", record.chunk_ns if keep_chunks else ())
    record.chunk_tokens = array("q", record.chunk_tokens if keep_chunks else ())
    # The text is only ever compared (SD against baseline greedy outputs): its hash does that.
    record.output_text = hashlib.sha256(record.output_text.encode("utf-8")).hexdigest()[:32] if keep_chunks else ""
    # The ids are only compared token by token (losslessness), so compact like the chunks.
    if record.output_token_ids is not None:
        record.output_token_ids = array("I", record.output_token_ids) if keep_chunks else None
    if record.engine_stats is not None:
        record.engine_stats.raw = {}
    return record


_MANIFEST_STR_FIELDS = ("engine", "dataset_config", "dataset_config_sha256")


class BundleRules(ReadRules):
    """A stranger's upload: every member checked before it is used, every rejection named by rule.

    One instance reads one run (it counts the run's records and load points against the caps);
    ``draft_length`` is the K the records are held to (0 for a baseline); a draft tree's nodes per
    verify come from the manifest's server description, as in ``results.json``. ``on_manifest(manifest,
    where)``, when given, sees the manifest before any record is read; ``on_record(record, where)``
    each record (warmup and failed included) once it passed these checks and before it is compacted
    and kept; either may raise :class:`BundleRejected`, so checks that need no more than that are
    made before the rest of the run is parsed.
    """

    def __init__(self, draft_length: int, limits: ArchiveLimits, caps: RunCaps, bounds: PhysicalBounds,
                 on_record: Callable[[TurnRecord, str], None] | None = None,
                 on_manifest: Callable[[RunManifest, str], None] | None = None):
        self.k, self.limits, self.caps, self.bounds, self.on_record = draft_length, limits, caps, bounds, on_record
        self.on_manifest = on_manifest
        self.seen = SupersessionTracker()  # record keys so far; a key repeats only as a --retry-errors rerun
        self.num_records = 0
        self.points: set[str] = set()
        self.draft_nodes: int | None = None  # set from the manifest, read before the records

    def error(self, detail: str, *, rule: str, where: str | None = None, field: str | None = None) -> Exception:
        return BundleRejected(detail, rule=rule, where=where, field=field)

    def check_names(self, path: str, names: list[str]) -> None:
        for name in names:
            if name[len(path) + 1:] not in RUN_FILES:
                raise BundleRejected(f"a run folder holds only {', '.join(RUN_FILES)}",
                                     rule="archive.unexpected_member", where=shown(name))

    def missing(self, path: str, name: str) -> Exception:
        return BundleRejected(f"bundle: run {shown(path)} has no {name.rsplit('/', 1)[1]}", rule="run.missing_file")

    def json(self, raw, where: str):
        if len(raw) > self.caps.max_json_bytes:
            raise BundleRejected(f"larger than {self.caps.max_json_bytes // 2**20} MiB", rule="caps.json_size",
                                 where=where)
        return loads_strict(raw, where)

    def manifest_from(self, data, where: str) -> RunManifest:
        for name in _MANIFEST_STR_FIELDS if isinstance(data, dict) else ():
            if not isinstance(data.get(name), str) or not data[name]:
                raise BundleRejected(f"field {name!r} must be a non-empty string", rule="manifest.schema", where=where)
        manifest = super().manifest_from(data, where)
        server = manifest.server if isinstance(manifest.server, dict) else {}
        self.draft_nodes = server_draft_nodes(server.get("server_info")) if self.k else None
        if self.on_manifest is not None:
            self.on_manifest(manifest, where)
        return manifest

    def results(self, raw, where: str) -> None:
        self.json(raw, where)  # kept in the bundle, never trusted; but it must still be clean JSON
        return None

    def lines(self, raw, where: str):
        return iter_jsonl(raw, where, self.limits.max_line_bytes)

    def record(self, data, where: str) -> TurnRecord:
        check_record_types(data, where)
        if self.num_records >= self.caps.max_records:
            raise BundleRejected(f"more than {self.caps.max_records} records in one run", rule="caps.records_per_run",
                                 where=where)
        self.num_records += 1
        supersedes = data.get("supersedes", 0)
        if not _is_int(supersedes) or supersedes < 0:
            _reject(f"must be a non-negative integer, got {shown(supersedes, 40)}", where, "supersedes")
        if self.seen.problem(data["record_key"], supersedes, data.get("error") is None):
            raise BundleRejected(f"record_key {shown(data['record_key'])} appears twice (only a failed record may be "
                                 "superseded, by a rerun that counts the records before it in supersedes)",
                                 rule="record.duplicate_key", where=where, field="record_key")
        try:
            record = TurnRecord.from_dict(data)
        except TypeError as exc:
            raise BundleRejected(f"not a request record ({exc})", rule="record.schema", where=where) from None
        if not record.warmup:
            self._check_measured(record, where)
        if self.on_record is not None:
            self.on_record(record, where)
        return _compact(record, keep_chunks=record.ok and not record.warmup)

    def _check_measured(self, record: TurnRecord, where: str) -> None:
        check_label(record.run_point, record.requested_concurrency, where)  # (.load_points)
        self.points.add(record.run_point)
        if len(self.points) > self.caps.max_points:
            raise BundleRejected(f"more than {self.caps.max_points} load points in one run", rule="caps.points_per_run",
                                 where=where, field="run_point")
        if record.ok:
            violations = check_record(record, self.k, self.bounds, draft_nodes=self.draft_nodes)
            if violations:
                first = violations[0]
                raise BundleRejected(f"request {shown(first.request)}: {first.detail}", rule=first.rule, where=where,
                                     field=first.field)

    def digest(self, raw) -> str:
        return ""  # the board identifies a bundle by its content hash and measurement digest instead


def read_run(path: str, role: str, files: dict, draft_length: int, *, limits: ArchiveLimits | None = None,
             caps: RunCaps = DEFAULT_CAPS, bounds: PhysicalBounds = DEFAULT_BOUNDS,
             on_record: Callable[[TurnRecord, str], None] | None = None,
             on_manifest: Callable[[RunManifest, str], None] | None = None) -> RunFolder:
    """Check and read the run folder ``path`` of a bundle (K = ``draft_length``; baselines are held to
    K = 0); ``on_record``, ``on_manifest``: see :class:`BundleRules`."""
    k = draft_length if role == "sd" else 0
    rules = BundleRules(k, limits or ArchiveLimits(), caps, bounds, on_record, on_manifest)
    run = read_run_folder(path, files, rules, role=role, draft_length=k)
    if not run.records:
        raise BundleRejected("no successful measured requests", rule="run.empty", where=f"{path}/{RECORDS_NAME}")
    return run
