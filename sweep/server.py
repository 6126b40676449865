"""One variant's server: started in its own process group, health-checked, described, stopped, gone.

``ServerProcess`` runs a variant's command (``{port}`` filled with the port it listens on) with its
output in a log file, waits for ``GET <health>`` to answer 200 within the variant's startup
timeout, records the exact command, the engine's version (as the client's engine adapter reads
it) and the ``/metrics`` text before and after the measurements. Stopping sends SIGTERM to the
process group and to every descendant that left it (vLLM's engine core, a supervisor's
children), SIGKILL after the variant's stop timeout, and then checks that none of those
processes is alive and that nothing answers on the port. ``ExternalServer`` is a variant given by
URL: nothing to start or stop, the same description.
"""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from pathlib import Path
from typing import Any, Callable

import psutil

from speedbench.engine.lifecycle import free_port, wait_healthy  # one lifecycle with the local engines
from speedbench.engine.lifecycle import http_get as _http_get
from speedbench.sweep.plan import PORT, Variant, command_argv

LOG_TAIL_CHARS = 4000


class ServerStartError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


def log_tail(path: Path | None, chars: int = LOG_TAIL_CHARS) -> str:
    if path is None or not path.exists():
        return ""
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - chars))
        return handle.read().decode(errors="replace")


def metrics_text(url: str) -> str | None:
    """The raw Prometheus text at ``url`` (None when the server has no such endpoint)."""
    try:
        status, body = _http_get(url, timeout=15)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return body.decode(errors="replace") if status == 200 else None


def engine_description(engine: str, url: str) -> dict[str, Any]:
    """What the client's adapter reads from the server (version, model id), as a run manifest has it."""
    import aiohttp

    from speedbench.client.engines import get_adapter
    from speedbench.client.engines.base import SamplingOptions

    async def describe() -> dict[str, Any]:
        adapter = get_adapter(engine)(url, SamplingOptions(), None, {})
        async with aiohttp.ClientSession() as session:
            return await adapter.describe_server(session)

    try:
        return asyncio.run(describe()) or {}
    except Exception as error:  # a description is provenance, not a reason to stop
        return {"describe_error": f"{type(error).__name__}: {error}"}


class ExternalServer:
    """A variant given by URL: a server someone else runs."""

    def __init__(self, variant: Variant):
        self.variant = variant
        self.url = variant.url
        self.pid = None
        self.last_stop: dict[str, Any] = {}

    def start(self, on_spawn=None) -> "ExternalServer":
        status = None
        try:
            status, _ = _http_get(self.url + self.variant.health, timeout=10)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ServerStartError(f"{self.url}{self.variant.health} did not answer: {error}") from None
        if status != 200:
            raise ServerStartError(f"{self.url}{self.variant.health} answered HTTP {status}")
        return self

    def alive(self) -> bool:
        try:
            return _http_get(self.url + self.variant.health, timeout=10)[0] == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def stop(self) -> dict[str, Any]:
        return {"stopped_by_sweep": False}

    def log_tail(self) -> str:
        return ""


class ServerProcess:
    """A variant's command, in a process group of its own; use ``start`` and ``stop``."""

    def __init__(self, variant: Variant, log_path: Path):
        self.variant = variant
        self.log_path = log_path
        self.port = variant.port
        self.argv: list[str] = []
        self.url: str | None = None
        self.process: subprocess.Popen | None = None
        self.create_time: float | None = None
        self.start_s: float | None = None
        self.last_stop: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, on_spawn: Callable[["ServerProcess"], None] | None = None) -> "ServerProcess":
        """Start and wait for health; ``on_spawn`` runs as soon as the process exists (the sweep
        records it then, so that a sweep killed during a long model load still finds it later)."""
        variant = self.variant
        if self.port is None:
            self.port = free_port(variant.host)
        command = variant.command.replace(PORT, str(self.port))
        self.argv = command_argv(command)
        shown = f"[{variant.host}]" if ":" in variant.host else variant.host
        self.url = f"http://{shown}:{self.port}"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"# speedbench sweep: {shlex.join(self.argv)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "speedbench.sweep.launch", *self.argv], stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=variant.cwd,
                env={**os.environ, **variant.env, "SPEEDBENCH_SWEEP_PID": str(os.getpid()), "PYTHONUNBUFFERED": "1"})
        try:
            self.create_time = psutil.Process(self.process.pid).create_time()
        except psutil.NoSuchProcess:
            self.create_time = None
        if on_spawn is not None:
            on_spawn(self)
        try:
            self._wait_healthy(started + variant.startup_timeout_s)
        except BaseException:
            self.last_stop = self.stop()
            raise
        self.start_s = time.monotonic() - started
        return self

    def _wait_healthy(self, deadline: float) -> None:
        url = self.url + self.variant.health
        wait_healthy(self.process, url, deadline, exited=lambda: ServerStartError(self.failure(
            f"exited with status {self.process.returncode} before {self.variant.health} answered")),
            timed_out=lambda: ServerStartError(self.failure(
                f"{url} did not answer 200 within {self.variant.startup_timeout_s:g} s (startup_timeout_s)")))

    def failure(self, what: str) -> str:
        return (f"variant {self.variant.name!r}: server {what}\n  command: {shlex.join(self.argv)}\n"
                f"  log: {self.log_path}\n--- last lines of the server log ---\n{self.log_tail()}")

    def log_tail(self) -> str:
        return log_tail(self.log_path)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> dict[str, Any]:
        """Stop the whole tree and check it is gone; returns what happened (for the sweep's record)."""
        if self.process is None:
            return {}
        outcome = stop_tree(self.process.pid, self.create_time, self.variant.stop_timeout_s)
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        outcome["exit_code"] = self.process.returncode
        outcome["port_free"] = not _listening(self.variant.host, self.port)
        outcome["gone"] = outcome["gone"] and outcome["port_free"]
        return outcome


def _listening(host: str, port: int | None) -> bool:
    if port is None:
        return False
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _tree(pid: int, create_time: float | None) -> tuple[list[psutil.Process], bool]:
    """The leader (if it is still the process we started), its descendants and the members of its
    process group; and whether signalling the group is safe. A pid in use by another process
    now (its start time differs) is left alone, and so is its group."""
    found: dict[int, psutil.Process] = {}
    try:
        leader = psutil.Process(pid)
        if create_time is not None and abs(leader.create_time() - create_time) >= 0.01:
            return [], False  # the pid was reused: not ours
        found[pid] = leader
        for child in leader.children(recursive=True):
            found[child.pid] = child
    except psutil.NoSuchProcess:
        pass  # the leader is gone; its group can outlive it (and its id is not reused while it does)
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pid:
                found.setdefault(process.pid, process)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return list(found.values()), True


def stop_tree(pid: int, create_time: float | None, timeout_s: float) -> dict[str, Any]:
    """SIGTERM the group and every descendant, SIGKILL what is left after ``timeout_s``; check gone."""
    processes, ours = _tree(pid, create_time)
    outcome: dict[str, Any] = {"processes": len(processes), "killed": 0}
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
        if ours and processes and os.getpgid(0) != pid:
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for process in processes:
            try:
                process.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        _, processes = psutil.wait_procs(processes, timeout=wait_s)
        if not processes:
            break
        outcome["killed"] = len(processes)  # still alive after SIGTERM's grace: killed
    survivors = [p.pid for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    outcome["survivors"] = survivors
    outcome["gone"] = not survivors
    return outcome


def describe_server(server, engine: str) -> dict[str, Any]:
    """Provenance for the sweep's record: the exact command, version and /metrics text."""
    return {"url": server.url, "pid": server.pid, "engine": engine,
            "command": shlex.join(server.argv) if getattr(server, "argv", None) else None,
            "argv": getattr(server, "argv", None) or None, "description": engine_description(engine, server.url)}


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(temporary, path)
