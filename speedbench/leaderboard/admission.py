"""Admission control: what one Space spends on validating uploads, whoever sends them.

Every validation (the Submit tab, the ``/submit_bundle`` API, a restore from the Hub) goes
through one :class:`Admission`, so the bounds hold across events:

- **one shared limit**: at most ``max_concurrent`` validations (and Compare's pairs, which read
  two stored bundles each) run at once, and together they
  reserve at most ``memory_bytes``; each reserves ``MEMORY_PER_UNPACKED_BYTE`` x the size its
  archive declares unpacked (gzip's length trailer, zip's directory) + ``MEMORY_BASE``, and the
  archive is then held to that size. An upload larger than the whole budget runs alone.
- **a CPU and memory budget enforced while it runs**: a watchdog reads each validation thread's
  CPU time (``/proc/self/task/<tid>/stat``) and the process's RSS every ``WATCH_S``; a thread past
  ``cpu_seconds``, or the largest running validation when the RSS passes ``rss_limit_bytes``, is
  stopped with :class:`BudgetExceeded` raised in that thread, and the upload is refused
  (``budget.cpu`` / ``budget.memory``); after each validation freed memory goes back to the OS
  (``malloc_trim``).
- **duplicates before the expensive work**: identical bytes already stored are refused before
  parsing; identical bytes being validated right now wait for that validation and get its answer;
  a measurement being validated by another upload (same digest, :mod:`.canonical`, computed while
  the records stream in) waits for it before any metric is computed.

The figures are in ``bench/leaderboard_load.py`` and docs/leaderboard.md.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import hashlib
import os
import io
import threading
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from speedbench import settings
from speedbench.leaderboard.archive import MiB, ArchiveLimits, check_zip_directory
from speedbench.leaderboard.schema import BundleRejected

# measured (bench/leaderboard_load.py): a realistic 440 MiB bundle peaked 3.6x its unpacked size above
# the idle app, one of the longest chunk lists (1-token chunks) more: the metrics, not the parse
MEMORY_PER_UNPACKED_BYTE = 4.0
MEMORY_BASE = 48 * MiB
WATCH_S = 0.1
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class BudgetExceeded(BaseException):
    """Raised inside a validation thread by the watchdog (a BaseException: no ``except Exception``
    in the validator swallows it)."""


@dataclass(frozen=True)
class Budget:
    """The Space's settings (``SPEEDBENCH_MAX_VALIDATIONS``, ``SPEEDBENCH_VALIDATION_MEMORY_MB``,
    ``SPEEDBENCH_VALIDATION_CPU_S``, ``SPEEDBENCH_RSS_LIMIT_MB``)."""

    max_concurrent: int = 2
    memory_bytes: int = 1280 * MiB
    cpu_seconds: float = 240.0
    rss_limit_bytes: int = 1800 * MiB  # the watchdog reacts within WATCH_S: the peak stays under 2 GB

    @classmethod
    def from_env(cls) -> "Budget":
        limit = settings.leaderboard_limit
        return cls(max_concurrent=limit("SPEEDBENCH_MAX_VALIDATIONS", cls.max_concurrent, int),
                   memory_bytes=int(limit("SPEEDBENCH_VALIDATION_MEMORY_MB", cls.memory_bytes / MiB) * MiB),
                   cpu_seconds=limit("SPEEDBENCH_VALIDATION_CPU_S", cls.cpu_seconds),
                   rss_limit_bytes=int(limit("SPEEDBENCH_RSS_LIMIT_MB", cls.rss_limit_bytes / MiB) * MiB))


def _open(source: bytes | Path):
    return open(source, "rb") if isinstance(source, Path) else io.BytesIO(source)


def declared_unpacked(source: bytes | Path) -> int:
    """The size an archive says it unpacks to, read without unpacking (0 when it says nothing)."""
    with _open(source) as handle:
        head = handle.read(4)
        size = handle.seek(0, 2)
        if head[:2] == b"\x1f\x8b" and size >= 18:
            handle.seek(size - 4)
            return int.from_bytes(handle.read(4), "little")  # ISIZE: checked against the real size while inflating
        if head[:2] == b"PK":
            try:
                check_zip_directory(handle, ArchiveLimits())  # refused in its slot at once, before any parse
                with zipfile.ZipFile(handle) as archive:
                    return sum(max(0, i.file_size) for i in archive.infolist())
            except (BundleRejected, zipfile.BadZipFile, OSError, ValueError, EOFError):
                return 0
    return 0


def reservation(source: bytes | Path, limits: ArchiveLimits) -> tuple[int, ArchiveLimits]:
    """(bytes reserved, the limits the archive is then held to: no more than it declared)."""
    unpacked = min(limits.max_total_bytes, declared_unpacked(source))
    size = source.stat().st_size if isinstance(source, Path) else len(source)
    held = replace(limits, max_total_bytes=max(unpacked, 1))
    return int(MEMORY_PER_UNPACKED_BYTE * unpacked + size + MEMORY_BASE), held


def content_sha256(source: bytes | Path) -> str:
    if isinstance(source, Path):
        with open(source, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    return hashlib.sha256(source).hexdigest()


def _thread_cpu(tid: int) -> float:
    with open(f"/proc/self/task/{tid}/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime


def _rss_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _raise_in(tid: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(exc) if exc else None)


def release_memory() -> None:
    """Free what only cycles hold, then give freed heap back to the OS (glibc keeps it otherwise:
    the RSS would stay at the peak)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):
            pass


@dataclass
class _Running:
    ident: int  # threading.get_ident(), for PyThreadState_SetAsyncExc
    native: int  # the kernel's thread id, for /proc
    cpu_start: float
    reserved: int
    stopped: str = ""
    armed: bool = True


@dataclass
class Admission:
    budget: Budget = field(default_factory=Budget)
    running: int = 0
    waiting: int = 0
    peak_running: int = 0
    reserved: int = 0
    peak_reserved: int = 0

    def __post_init__(self):
        self._cond = threading.Condition()
        self._active: dict[int, _Running] = {}
        self._in_flight: dict[str, Future] = {}
        self._measurements: dict[str, threading.Lock] = {}
        self._watchdog: threading.Thread | None = None

    # ---- the shared limit ------------------------------------------------------------------
    @contextmanager
    def slot(self, need: int, what: str = "validating this upload",
             advice: str = "split the submission or trim the runs") -> Iterator[_Running]:
        """Run the body once a slot and ``need`` bytes of the budget are free; budgets enforced in it
        (``what`` and ``advice`` word the refusal when one is stopped)."""
        need = min(need, self.budget.memory_bytes)  # larger than the budget: runs alone
        with self._cond:
            self.waiting += 1
            self._cond.notify_all()  # a waiter is a change too (wait_for watches the counters)
            self._cond.wait_for(lambda: self.running < self.budget.max_concurrent
                                and self.reserved + need <= self.budget.memory_bytes)
            self.waiting -= 1
            self.running += 1
            self.reserved += need
            self.peak_running = max(self.peak_running, self.running)
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            native = threading.get_native_id()
            me = _Running(threading.get_ident(), native, _thread_cpu(native), need)
            self._active[me.ident] = me
            self._cond.notify_all()  # wakes a test waiting for the counters
        self._start_watchdog()
        stopped = False
        try:
            yield me
        except BudgetExceeded:
            stopped = True  # raised below, outside this block: no traceback (with the records) kept as context
        finally:
            with self._cond:
                self._active.pop(me.ident, None)
                _raise_in(me.ident, None)  # a stop that arrived as the body ended is dropped
                self.running -= 1
                self.reserved -= need
                self._cond.notify_all()
        if stopped:
            raise BundleRejected(f"{what} needed more {me.stopped} than one upload may use "
                                 f"({self._limit_text(me.stopped)}); {advice}", rule=f"budget.{me.stopped}")

    def disarm(self, me: _Running) -> None:
        """The budgets stop applying to this validation (it is about to write the store)."""
        with self._cond:
            me.armed = False
            if me.stopped:  # the stop was raised already: let it arrive
                return
        _raise_in(me.ident, None)

    def _limit_text(self, what: str) -> str:
        if what == "cpu":
            return f"{self.budget.cpu_seconds:g} CPU seconds"
        return f"the app stays under {self.budget.rss_limit_bytes // MiB} MiB"

    def wait_for(self, predicate: Callable[["Admission"], bool], timeout: float | None = None) -> bool:
        """Block until ``predicate(self)`` holds (the counters change under one condition)."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    # ---- the watchdog ------------------------------------------------------------------------
    def _start_watchdog(self) -> None:
        with self._cond:
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(target=self._watch, name="speedbench-admission", daemon=True)
                self._watchdog.start()

    def _watch(self) -> None:
        while True:
            with self._cond:
                if not self._active:
                    self._watchdog = None
                    return
                self._check()
                self._cond.wait(WATCH_S)

    def _check(self) -> None:
        """One look at every running validation (called with the condition held)."""
        for run in self._active.values():
            try:
                spent = _thread_cpu(run.native) - run.cpu_start
            except OSError:
                continue
            if run.armed and not run.stopped and spent > self.budget.cpu_seconds:
                run.stopped = "cpu"
                _raise_in(run.ident, BudgetExceeded)
        if _rss_bytes() > self.budget.rss_limit_bytes:
            largest = max((r for r in self._active.values() if r.armed and not r.stopped), key=lambda r: r.reserved,
                          default=None)
            if largest is not None:
                largest.stopped = "memory"
                _raise_in(largest.ident, BudgetExceeded)

    # ---- duplicates before the expensive work ---------------------------------------------------
    @contextmanager
    def single_flight(self, key: str) -> Iterator[Future | None]:
        """Yields None to the first validation of the bytes with sha256 ``key`` (it sets the future
        :meth:`future_for` gives it), or the Future of the one already running."""
        with self._cond:
            running = self._in_flight.get(key)
            if running is None:
                mine = self._in_flight[key] = Future()
        if running is not None:
            yield running
            return
        try:
            yield None
        finally:
            with self._cond:
                self._in_flight.pop(key, None)
            if not mine.done():
                mine.set_exception(BundleRejected("an identical upload being validated at the same time failed",
                                                  rule="internal"))

    def future_for(self, key: str) -> Future | None:
        with self._cond:
            return self._in_flight.get(key)

    @contextmanager
    def measurement(self, digest: str) -> Iterator[None]:
        """One validation at a time per measurement digest (the second then finds the first stored)."""
        with self._cond:
            lock = self._measurements.setdefault(digest, threading.Lock())
        with lock:
            yield
        with self._cond:
            if not lock.locked():
                self._measurements.pop(digest, None)


def submit(source: bytes | Path, store, known_builds, limits: ArchiveLimits, admission: Admission):
    """:func:`speedbench.leaderboard.validate.submit_bundle` under admission control (module
    docstring). ``source``: the upload's bytes, or its file (read only once a slot is free)."""
    size = source.stat().st_size if isinstance(source, Path) else len(source)
    if size > limits.max_archive_bytes:
        raise BundleRejected(f"upload is {size / MiB:.1f} MiB; the limit is {limits.max_archive_bytes / MiB:.0f} "
                             "MiB", rule="archive.size")
    key = content_sha256(source)
    existing = store.has_archive(key)
    if existing:
        raise BundleRejected(f"duplicate submission: these exact bytes are already on the board as entry {existing}",
                             rule="duplicate.measurement")
    need, held = reservation(source, limits)
    with admission.single_flight(key) as other:
        if other is not None:
            return _answer_of(other)
        mine = admission.future_for(key)
        refused = None
        try:
            with admission.slot(need) as me:
                entry = _validate_and_store(source, store, known_builds, held, admission, me)
        except BundleRejected as exc:  # a copy without the traceback, whose frames hold the parsed records
            refused = BundleRejected(exc.detail, rule=exc.rule, where=exc.where, field=exc.field)
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        release_memory()  # the parsed records are gone with _validate_and_store's frame
        if refused is not None:
            mine.set_exception(refused)
            raise refused
        mine.set_result(entry)
        return entry


def _validate_and_store(source, store, known_builds, held: ArchiveLimits, admission: Admission, me: _Running):
    from speedbench.leaderboard.validate import (
        check_names, compute_entry_metrics, duplicate_of, parse_bundle, store_entry)

    data = source.read_bytes() if isinstance(source, Path) else source
    bundle = parse_bundle(data, known_builds, held)
    check_names(bundle.metadata, store)
    with admission.measurement(bundle.measurement_sha256):
        duplicate_of(store, bundle.measurement_sha256)
        metrics = compute_entry_metrics(bundle)
        admission.disarm(me)  # the store's transaction is never interrupted
        return store_entry(bundle, data, metrics, store)


def _answer_of(other: Future):
    """The answer to an upload of the same bytes as one being validated: that one's outcome."""
    try:
        entry = other.result()
    except BundleRejected as exc:
        raise BundleRejected(exc.detail, rule=exc.rule, where=exc.where, field=exc.field) from None
    raise BundleRejected(f"duplicate submission: an identical upload was accepted at the same time as entry "
                         f"{entry.id}", rule="duplicate.measurement")
