"""Run files in a bundle -> the inputs of the metrics core.

This is the one module that knows the client's record format (:mod:`speedbench.records`);
when that format changes, this is the place to follow it. It reads untrusted bytes, so every
field the board uses is type-checked and every time is checked for sense (no negative times,
no chunk before its request was scheduled, chunk times in order) before a record is built.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from speedbench.leaderboard.archive import iter_jsonl, loads_strict
from speedbench.leaderboard.schema import BundleRejected
from speedbench.records import RunManifest, TurnRecord

_INT_FIELDS = ("scheduled_ns", "send_ns", "end_ns", "turn_index", "prompt_tokens", "output_tokens")
_STR_FIELDS = ("record_key", "run_point", "question_id", "category")
_MANIFEST_STR_FIELDS = ("engine", "dataset_config", "dataset_config_sha256")
_POINT = re.compile(r"^c(\d+)$")


@dataclass
class RunData:
    """One run folder of a bundle, checked: its manifest and its measured request-turns."""

    path: str
    role: str
    manifest: RunManifest
    records: list[TurnRecord]  # measured: warmup and failed requests left out
    num_errors: int = 0
    num_warmup: int = 0
    points: dict[str, list[TurnRecord]] = field(default_factory=dict)

    @property
    def dataset_config(self) -> str:
        return self.manifest.dataset_config

    @property
    def isl(self) -> str | None:
        """The throughput bucket (``"8k"`` for ``throughput_8k``), None for the qualitative split."""
        config = self.manifest.dataset_config
        return config.split("_", 1)[1] if config.startswith("throughput_") else None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_record_dict(data, where: str) -> None:
    if not isinstance(data, dict):
        raise BundleRejected(f"{where}: a record must be a JSON object")
    for name in _STR_FIELDS:
        if not isinstance(data.get(name), str) or not data[name]:
            raise BundleRejected(f"{where}: field {name!r} must be a non-empty string")
    for name in _INT_FIELDS:
        if not _is_int(data.get(name)):
            raise BundleRejected(f"{where}: field {name!r} must be an integer, got {data.get(name)!r:.40}")
        if data[name] < 0:
            raise BundleRejected(f"{where}: field {name!r} is negative ({data[name]}); times and counts must be >= 0")
    chunk_ns, chunk_tokens = data.get("chunk_ns"), data.get("chunk_tokens")
    if not isinstance(chunk_ns, list) or not isinstance(chunk_tokens, list) or len(chunk_ns) != len(chunk_tokens):
        raise BundleRejected(f"{where}: chunk_ns and chunk_tokens must be lists of the same length")
    if not all(_is_int(v) for v in chunk_ns) or not all(_is_int(v) for v in chunk_tokens):
        raise BundleRejected(f"{where}: chunk_ns and chunk_tokens must hold integers")
    if any(v < 0 for v in chunk_tokens):
        raise BundleRejected(f"{where}: negative token count in chunk_tokens")
    scheduled, send, end = data["scheduled_ns"], data["send_ns"], data["end_ns"]
    if send < scheduled:
        raise BundleRejected(f"{where}: send_ns is before scheduled_ns (negative queueing time)")
    if chunk_ns:
        if chunk_ns[0] < scheduled or any(b < a for a, b in zip(chunk_ns, chunk_ns[1:])):
            raise BundleRejected(f"{where}: chunk times go backwards or precede the request (negative time)")
        if end < chunk_ns[-1]:
            raise BundleRejected(f"{where}: end_ns is before the last chunk (negative time)")
    elif end < scheduled:
        raise BundleRejected(f"{where}: end_ns is before scheduled_ns (negative time)")
    _check_engine_stats(data.get("engine_stats"), where)
    concurrency = data.get("requested_concurrency")
    if concurrency is not None and (not _is_int(concurrency) or concurrency < 1):
        raise BundleRejected(f"{where}: requested_concurrency must be a positive integer or null")
    started = data.get("started_unix_s")
    if started is not None and (not isinstance(started, (int, float)) or not math.isfinite(started) or started < 0):
        raise BundleRejected(f"{where}: started_unix_s must be a non-negative number")


def _check_engine_stats(stats, where: str) -> None:
    if stats is None:
        return
    if not isinstance(stats, dict):
        raise BundleRejected(f"{where}: engine_stats must be an object or null")
    for name in ("verify_steps", "draft_tokens", "accepted_tokens", "draft_length", "decode_steps",
                 "drafted_steps", "accepted_past_max_tokens"):
        value = stats.get(name)
        if value is not None and (not _is_int(value) or value < 0):
            raise BundleRejected(f"{where}: engine_stats.{name} must be a non-negative integer or null")
    histogram = stats.get("acceptance_histogram")
    if histogram is not None and (not isinstance(histogram, list)
                                  or not all(_is_int(v) and v >= 0 for v in histogram)):
        raise BundleRejected(f"{where}: engine_stats.acceptance_histogram must be a list of non-negative integers")
    if not isinstance(stats.get("source", ""), str) or not isinstance(stats.get("exact", True), bool):
        raise BundleRejected(f"{where}: engine_stats.source must be a string and engine_stats.exact a boolean")


def parse_manifest(raw: bytes, where: str) -> RunManifest:
    data = loads_strict(raw, where)
    if not isinstance(data, dict):
        raise BundleRejected(f"{where}: must hold a JSON object")
    for name in _MANIFEST_STR_FIELDS:
        if not isinstance(data.get(name), str) or not data[name]:
            raise BundleRejected(f"{where}: field {name!r} must be a non-empty string")
    try:
        return RunManifest.from_dict(data)
    except TypeError as exc:  # a required manifest field is missing
        raise BundleRejected(f"{where}: not a run manifest ({exc})") from None


def parse_run(path: str, role: str, files: dict[str, bytes]) -> RunData:
    """Check and parse the run folder ``path`` of a bundle."""
    manifest_name, records_name = f"{path}/manifest.json", f"{path}/records.jsonl"
    for name in (manifest_name, records_name):
        if name not in files:
            raise BundleRejected(f"bundle: run {path!r} has no {name.rsplit('/', 1)[1]}")
    manifest = parse_manifest(files[manifest_name], manifest_name)
    if f"{path}/results.json" in files:  # kept, never trusted; but it must still be clean JSON
        loads_strict(files[f"{path}/results.json"], f"{path}/results.json")
    records: list[TurnRecord] = []
    errors = warmup = 0
    seen: set[str] = set()
    for number, data in iter_jsonl(files[records_name], records_name):
        where = f"{records_name} line {number}"
        _check_record_dict(data, where)
        if data["record_key"] in seen:
            raise BundleRejected(f"{where}: record_key {data['record_key']!r} appears twice")
        seen.add(data["record_key"])
        try:
            record = TurnRecord.from_dict(data)
        except TypeError as exc:
            raise BundleRejected(f"{where}: not a request record ({exc})") from None
        if record.warmup:
            warmup += 1
        elif not record.ok:
            errors += 1
        else:
            records.append(record)
    if not records:
        raise BundleRejected(f"{records_name}: no successful measured requests")
    points: dict[str, list[TurnRecord]] = {}
    for record in records:
        points.setdefault(record.run_point, []).append(record)
    return RunData(path=path, role=role, manifest=manifest, records=records,
                   num_errors=errors, num_warmup=warmup, points=points)


def point_concurrency(point: str, records: list[TurnRecord]) -> int | None:
    """The requested concurrency of a closed-loop point (``"c16"`` -> 16), None for open loop."""
    if records and records[0].requested_concurrency:
        return int(records[0].requested_concurrency)
    match = _POINT.match(point)
    return int(match.group(1)) if match else None
