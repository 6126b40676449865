"""The Ray actor behind ``--ray``: one worker's share of a phase, run on its own node.

``PhaseWorker`` is a plain class (``ray_pool`` wraps it with ``ray.remote`` as a threaded
actor, so ``poll`` answers while a phase runs). ``start`` runs the share in a thread of its own
with its own event loop (uvloop) and connection pool, writing records to a file on the actor's
node exactly as a local worker process writes ``records.jsonl``; ``poll`` hands the driver the
complete lines written since the last poll, moved onto the driver's timeline (``ray_clock``).
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import orjson  # a pinned dependency

from speedbench.client.execution.event_loop import run_phase
from speedbench.client.execution.phase import ClientSettings, ErrorBudgetExceeded, ErrorCounter, PhaseSpec
from speedbench.client.execution.processes import run_event_loop
from speedbench.client.data.workload import Conversation

POLL_WAIT_S = 0.5  # a poll returns after this long without a new record (the driver polls again)
# After the first new record, a poll waits this much longer for more: at most ~20 replies a second
# per actor, so the driver's calls do not take the actor's GIL from its event loop at every record.
POLL_COALESCE_S = 0.05
POLL_MAX_BYTES = 8 << 20  # per poll reply; the rest comes with the next one
MONOTONIC_FIELDS = ("scheduled_ns", "send_ns", "end_ns")  # TurnRecord times on the worker's monotonic clock


def boot_id() -> str:
    """This kernel's boot id: two processes with the same one share the monotonic and wall clocks."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:  # not Linux: every worker gets its clocks measured
        return f"{socket.gethostname()}-{uuid.uuid4().hex}"


def shift_line(line: bytes, shift_ns: int, offset_ns: int) -> tuple[str, bool, bytes]:
    """``(record_key, warmup, line)`` with the record's monotonic times plus ``shift_ns`` (onto
    the driver's monotonic clock) and its wall time minus ``offset_ns`` (onto the driver's wall
    clock); the line is passed through unchanged when both are 0."""
    data = orjson.loads(line)
    if shift_ns or offset_ns:
        for name in MONOTONIC_FIELDS:
            data[name] += shift_ns
        data["chunk_ns"] = [t + shift_ns for t in data.get("chunk_ns") or []]
        data["started_unix_s"] -= offset_ns / 1e9
        line = orjson.dumps(data)
    return data["record_key"], bool(data.get("warmup")), line


class _ClusterErrors(ErrorCounter):
    """This worker's errors plus those the driver last reported from the others: the error budget
    is the whole run's, as with local workers' shared counter (it lags by one poll)."""

    def __init__(self):
        super().__init__()
        self.elsewhere = 0

    def add(self) -> int:
        return super().add() + self.elsewhere

    @property
    def value(self) -> int:
        return self._local + self.elsewhere

    @property
    def local(self) -> int:
        return self._local


class PhaseWorker:
    def __init__(self, tokenizer_files: dict[str, bytes]):
        # The tokenizer travels with the actor: the driver's folder need not exist on this node.
        self.folder = Path(tempfile.mkdtemp(prefix="speedbench-ray-"))
        tokenizer = self.folder / "tokenizer"
        tokenizer.mkdir()
        for name, data in tokenizer_files.items():
            (tokenizer / name).write_bytes(data)
        self.tokenizer_path = str(tokenizer)
        self._changed = threading.Condition()
        self._phases = 0
        self._status: tuple[str, str] | None = None
        self._thread: threading.Thread | None = None
        self._errors = _ClusterErrors()
        self._records = self.folder / "none.jsonl"
        self._shift = (0, 0)

    def describe(self) -> dict:
        """Where this actor runs (after the imports a phase needs, so they are off the clock)."""
        import aiohttp  # noqa: F401
        import ray

        import speedbench

        return {"hostname": socket.gethostname(), "node_id": ray.get_runtime_context().get_node_id(),
                "node_ip": ray.util.get_node_ip_address(), "pid": os.getpid(), "boot_id": boot_id(),
                "version": speedbench.__version__}

    def clock(self) -> tuple[int, int]:
        return time.time_ns(), time.perf_counter_ns()

    def start(self, settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation], worker: int,
              shift_ns: int, offset_ns: int) -> int:
        """Start the share in a new thread; returns this actor's monotonic time on receipt."""
        received = time.perf_counter_ns()
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("a phase is still running on this worker")
        self._phases += 1
        self._records = self.folder / f"phase-{self._phases}.jsonl"
        self._records.touch()
        self._status, self._errors, self._shift = None, _ClusterErrors(), (shift_ns, offset_ns)
        local = replace(settings, records_path=str(self._records), tokenizer=self.tokenizer_path)
        self._thread = threading.Thread(target=self._run, args=(local, phase, conversations, worker),
                                        name=f"speedbench-ray-worker-{worker}", daemon=True)
        self._thread.start()
        return received

    def _run(self, settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation], worker: int):
        status = ("ok", "")
        try:
            run_event_loop(run_phase(settings, phase, conversations, worker, self._errors, self._notify))
        except ErrorBudgetExceeded as error:
            status = ("budget", str(error))
        except BaseException as error:  # reported to the driver by the next poll
            status = ("error", f"{type(error).__name__}: {error}")
        with self._changed:
            self._status = status
            self._changed.notify_all()

    def _notify(self, record) -> None:
        with self._changed:
            self._changed.notify_all()

    def _size(self) -> int:
        return self._records.stat().st_size

    def poll(self, offset: int, errors_elsewhere: int, wait_s: float = POLL_WAIT_S,
             coalesce_s: float = POLL_COALESCE_S) -> dict:
        """The complete record lines after byte ``offset`` (waiting up to ``wait_s`` for one, then
        ``coalesce_s`` for more); ``status`` is ``running`` until the phase ended and every line
        was handed over."""
        self._errors.elsewhere = errors_elsewhere
        with self._changed:
            if self._changed.wait_for(lambda: self._status is not None or self._size() > offset, timeout=wait_s):
                self._changed.wait_for(lambda: self._status is not None, timeout=coalesce_s)
            status = self._status  # read before the file: once set, the file is complete
        with open(self._records, "rb") as handle:
            handle.seek(offset)
            data = handle.read(POLL_MAX_BYTES)
            if b"\n" not in data and len(data) == POLL_MAX_BYTES:
                data += handle.readline()  # one record longer than a reply
        end = data.rfind(b"\n") + 1
        lines = [shift_line(line, *self._shift) for line in data[:end].split(b"\n")[:-1]]
        finished = status is not None and offset + end == self._size()
        return {"lines": lines, "offset": offset + end, "status": status[0] if finished else "running",
                "message": status[1] if finished else "", "errors": self._errors.local}

    def cleanup(self) -> None:
        """Remove this actor's files (the driver has every line; called before it is killed)."""
        shutil.rmtree(self.folder, ignore_errors=True)
