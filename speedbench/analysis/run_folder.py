"""One run folder, one reader: what ``speedbench run`` wrote, as every reader of it sees it.

A run folder holds ``manifest.json`` (what produced the run), ``records.jsonl`` (one record per
request-turn, written as each completed), ``counters.jsonl`` (the engine's Prometheus snapshots
around each load point), ``results.json`` (the client's figures) and, when ``speedbench serve`` or
``demo`` started the engine, ``engine.json`` (its description). :func:`read_run_folder` reads one
into a :class:`RunFolder`. The client's results (:func:`speedbench.analysis.run_results.compute_results`),
the report (:mod:`speedbench.report`) and the board (:func:`speedbench.leaderboard.runs.read_run`,
from a bundle's members) all read through it, so each file is parsed in one place and each derived
fact has one answer: the load points and their order, the ISL bucket
(:func:`speedbench.schema.isl_bucket`), whether the run speculated and at what K
(:mod:`speedbench.metrics.acceptance.draft_length`).

How strictly the bytes are held is the caller's :class:`ReadRules`. The default reads a folder
the client wrote on this machine (a torn last line of a run killed mid-write is skipped: resume
reruns it); the board's rules hold a stranger's upload to types, caps and physical bounds, record
by record, and keep failed and warmup requests without their chunks.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from speedbench.analysis.selection import successful
from speedbench.metrics.acceptance.draft_length import Speculation, run_speculation
from speedbench.records import (
    COUNTERS_NAME,
    MANIFEST_NAME,
    RECORDS_NAME,
    RESULTS_NAME,
    RunManifest,
    TurnRecord,
    jsonl_lines,
)
from speedbench.analysis.supersession import SupersessionError, split_superseded
from speedbench.schema import isl_bucket

ENGINE_NAME = "engine.json"  # what `speedbench serve` / `demo` said about the engine they started


class RunFolderError(ValueError):
    """A run folder is missing a file or holds one that cannot be read (the message names it)."""


def point_sort_key(point: str, requested_concurrency: int | None, request_rate: float | None) -> tuple:
    """Sweep order: closed loop by concurrency, then open loop by rate, then by name."""
    return (requested_concurrency is None, requested_concurrency or 0, request_rate or 0.0, point)


def _by_point(records: list[TurnRecord]) -> dict[str, list[TurnRecord]]:
    groups: dict[str, list[TurnRecord]] = {}
    for record in records:
        groups.setdefault(record.run_point, []).append(record)
    return groups


@dataclass(eq=False)
class RunFolder:
    """One run folder as read. ``records`` are the figures' input: measured, successful request-turns.

    path: the folder (on disk, or a bundle member prefix such as ``runs/sd``);
    all_records: every live line of ``records.jsonl`` in file order, warmup and failed ones included;
    superseded: the failed records a ``--retry-errors`` rerun replaced (:mod:`speedbench.analysis.supersession`):
    history, in no figure;
    counters: the ``counters.jsonl`` entry of each load point (:func:`counter_points`);
    results / engine_info: ``results.json`` (for reference: readers recompute) / ``engine.json``;
    role: the board's "sd" / "baseline" (None in a local folder: inferred, see ``speculation``);
    given_draft_length: K as the caller knows it (the board's metadata, 0 for a baseline);
    run_id / label: a short name and a display label (the report makes both unique).
    """

    path: str
    manifest: RunManifest
    all_records: list[TurnRecord]
    counters: dict[str, dict] = field(default_factory=dict)
    results: dict[str, Any] | None = None
    engine_info: dict[str, Any] | None = None
    records_sha256: str = ""
    role: str | None = None
    given_draft_length: int | None = None
    run_id: str = ""
    label: str = ""
    superseded: list[TurnRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path = str(self.path)
        self.run_id = self.run_id or Path(self.path).name or Path(self.path).resolve().name
        self.label = self.label or self._default_label()

    # ---- the records, as each reader groups them -------------------------------------------
    @cached_property
    def measured(self) -> list[TurnRecord]:
        """Every non-warmup request-turn (failed ones included), in file order."""
        return [r for r in self.all_records if not r.warmup]

    @cached_property
    def records(self) -> list[TurnRecord]:
        """The measured, successful request-turns: what every figure is computed from
        (:func:`speedbench.analysis.selection.successful`)."""
        return successful(self.all_records)

    @property
    def num_errors(self) -> int:
        return len(self.measured) - len(self.records)

    @property
    def num_warmup(self) -> int:
        return len(self.all_records) - len(self.measured)

    @cached_property
    def point_names(self) -> list[str]:
        """The load points of the run (any record, warmup included), in sweep order."""
        firsts = {point: group[0] for point, group in _by_point(self.all_records).items()}
        return sorted(firsts, key=lambda p: point_sort_key(p, firsts[p].requested_concurrency, firsts[p].request_rate))

    @cached_property
    def points(self) -> dict[str, list[TurnRecord]]:
        """Successful measured request-turns per load point, in sweep order."""
        groups = _by_point(self.records)
        return {p: groups[p] for p in self.point_names if p in groups}

    @cached_property
    def measured_points(self) -> dict[str, list[TurnRecord]]:
        """Measured request-turns per load point (failed ones included), in sweep order."""
        groups = _by_point(self.measured)
        return {p: groups[p] for p in self.point_names if p in groups}

    def point_records(self, point: str) -> list[TurnRecord]:
        """Every record of one load point (warmup and failed included), in file order."""
        return [r for r in self.all_records if r.run_point == point]

    # ---- facts about the run, one answer each ----------------------------------------------
    @property
    def dataset_config(self) -> str:
        return self.manifest.dataset_config

    @property
    def isl_bucket(self) -> str | None:
        """``"8k"`` for ``throughput_8k``; None for a config without a length bucket."""
        return isl_bucket(self.dataset_config)

    @cached_property
    def speculation(self) -> Speculation:
        server_info = (self.manifest.server or {}).get("server_info") if isinstance(self.manifest.server, dict) \
            else None
        return run_speculation(self.all_records, given=self.given_draft_length, options=self.manifest.options,
                               engine_info=self.engine_info, server_info=server_info, role=self.role)

    @property
    def speculative(self) -> bool:
        return self.speculation.speculative

    @property
    def draft_length(self) -> int | None:
        """K (None for a baseline, or when nothing declared or reported it)."""
        return self.speculation.draft_length

    @property
    def notes(self) -> list[str]:
        return list(self.speculation.notes)

    def _default_label(self) -> str:
        if self.engine_info and self.engine_info.get("label"):
            return str(self.engine_info["label"])
        if self.speculative:
            k = self.draft_length
            return f"SD {self.speculation.mode}" + (f" K={k}" if k else "")
        return "baseline (no SD)"


def counter_points(lines: Iterator[tuple[int, Any]]) -> dict[str, dict]:
    """The latest ``counters.jsonl`` entry per point (``complete`` False when a point ran twice)."""
    points: dict[str, dict] = {}
    for _, entry in lines:
        if entry["run_point"] in points:
            entry["complete"] = False  # the point ran in more than one invocation
        points[entry["run_point"]] = entry
    return points


class ReadRules:
    """How strictly a folder's bytes are held; this base reads a folder the client wrote here.

    The board subclasses it (:class:`speedbench.leaderboard.runs.BundleRules`); each hook gets the
    member name (``where``) to put in its message.
    """

    def error(self, detail: str, *, rule: str, where: str | None = None, field: str | None = None) -> Exception:
        return RunFolderError(f"{where}: {detail}" if where else detail)

    def check_names(self, path: str, names: list[str]) -> None:
        """Called with the folder's file names before anything is read (the board refuses strangers)."""

    def missing(self, path: str, name: str) -> Exception:
        why = " (written by 'speedbench run' when a run starts)" if name.endswith(MANIFEST_NAME) else ""
        return self.error(f"missing{why}", rule="run.missing_file", where=name)

    def json(self, raw, where: str) -> Any:
        try:
            return json.loads(bytes(raw))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise self.error(f"not valid JSON ({error})", rule="json.invalid", where=where) from None

    def lines(self, raw, where: str) -> Iterator[tuple[int, Any]]:
        return jsonl_lines(raw, where)

    def manifest(self, raw, where: str) -> RunManifest:
        return self.manifest_from(self.json(raw, where), where)

    def manifest_from(self, data, where: str) -> RunManifest:
        if not isinstance(data, dict):
            raise self.error("must hold a JSON object", rule="manifest.schema", where=where)
        try:
            return RunManifest.from_dict(data)
        except TypeError as exc:  # a required manifest field is missing
            raise self.error(f"not a run manifest ({exc})", rule="manifest.schema", where=where) from None

    def results(self, raw, where: str) -> dict | None:
        return self.json(raw, where)

    def record(self, data, where: str) -> TurnRecord:
        try:
            return TurnRecord.from_dict(data)
        except (TypeError, KeyError, AttributeError) as exc:
            raise self.error(f"a record lacks a required field ({exc})", rule="record.schema", where=where) from None

    def digest(self, raw) -> str:
        return hashlib.sha256(raw if isinstance(raw, (bytes, bytearray)) else bytes(raw)).hexdigest()


class _DiskFiles(Mapping):
    """The files of a folder on disk as a read-only ``{"<folder>/<name>": bytes}`` mapping."""

    def __init__(self, folder: Path):
        self.folder = folder

    def _file(self, key: str) -> Path:
        return self.folder / Path(key).name

    def __getitem__(self, key: str) -> bytes:
        if key not in self:
            raise KeyError(key)
        return self._file(key).read_bytes()

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key.startswith(f"{self.folder}/") and self._file(key).is_file()

    def __iter__(self):
        return (f"{self.folder}/{p.name}" for p in sorted(self.folder.iterdir()) if p.is_file())

    def __len__(self) -> int:
        return sum(1 for _ in self)


def read_run_manifest(path: str | Path) -> RunManifest:
    """Only ``manifest.json`` of a run folder on disk (what produced the run, without reading its
    records), parsed as :func:`read_run_folder` parses it; RunFolderError names the file."""
    rules, folder = ReadRules(), Path(path)
    where = f"{folder}/{MANIFEST_NAME}"
    if not (folder / MANIFEST_NAME).is_file():
        raise rules.missing(str(folder), where)
    return rules.manifest((folder / MANIFEST_NAME).read_bytes(), where)


def read_run_folder(path: str | Path, files: Mapping[str, Any] | None = None, rules: ReadRules | None = None, *,
                    role: str | None = None, draft_length: int | None = None) -> RunFolder:
    """Read the run folder ``path``: from disk, or from ``files`` (``{"<path>/<name>": bytes}``, a
    bundle's members). ``role`` and ``draft_length`` are what the caller knows (the board's
    submission); ``rules`` how strictly the bytes are held (:class:`ReadRules`)."""
    rules = rules or ReadRules()
    path = str(path).rstrip("/") if files is not None else str(Path(path))
    if files is None:
        if not Path(path).is_dir():
            raise RunFolderError(f"{path}: not a run folder (expected {RECORDS_NAME} and {MANIFEST_NAME} in it)")
        files = _DiskFiles(Path(path))
    rules.check_names(path, sorted(n for n in files if n.startswith(path + "/")))
    name = {f: f"{path}/{f}" for f in (MANIFEST_NAME, RECORDS_NAME, COUNTERS_NAME, RESULTS_NAME, ENGINE_NAME)}
    for required in (MANIFEST_NAME, RECORDS_NAME):
        if name[required] not in files:
            raise rules.missing(path, name[required])
    manifest = rules.manifest(files[name[MANIFEST_NAME]], name[MANIFEST_NAME])
    results = rules.results(files[name[RESULTS_NAME]], name[RESULTS_NAME]) if name[RESULTS_NAME] in files else None
    raw = files[name[RECORDS_NAME]]
    records = [rules.record(data, f"{name[RECORDS_NAME]} line {number}")
               for number, data in rules.lines(raw, name[RECORDS_NAME])]
    try:
        records, superseded = split_superseded(records)
    except SupersessionError as error:
        raise rules.error(str(error), rule="record.supersedes", where=name[RECORDS_NAME], field="supersedes") from None
    counters = counter_points(rules.lines(files[name[COUNTERS_NAME]], name[COUNTERS_NAME])) \
        if name[COUNTERS_NAME] in files else {}
    engine_info = rules.json(files[name[ENGINE_NAME]], name[ENGINE_NAME]) if name[ENGINE_NAME] in files else None
    return RunFolder(path=path, manifest=manifest, all_records=records, counters=counters, results=results,
                     engine_info=engine_info, records_sha256=rules.digest(raw), role=role,
                     given_draft_length=draft_length, superseded=superseded)


__all__ = ["ENGINE_NAME", "ReadRules", "RunFolder", "RunFolderError", "counter_points", "point_sort_key",
           "read_run_folder", "read_run_manifest"]
