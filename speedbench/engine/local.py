"""``LocalEngine``: a real llama.cpp server on 127.0.0.1, started and stopped around a block.

    with LocalEngine(EngineConfig(speculation="draft", draft_length=4, n_parallel=4)) as engine:
        engine.url          # "http://127.0.0.1:PORT" (OpenAI-compatible /v1/completions,
                            #  /health, /tokenize, Prometheus /metrics)
        engine.describe()   # provenance for a run manifest

The server runs in a child process (``speedbench.engine.server_process``); readiness is the
child's announced URL followed by ``GET /health`` answering ``{"status": "ok"}``. Stopping closes
the child's stdin, then escalates to SIGTERM and SIGKILL, and always reaps the process.
"""
from __future__ import annotations

import hashlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from speedbench.engine.config import EngineConfig

_HEALTH_POLL_S = 0.05  # between health probes while the model loads


class EngineStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


@lru_cache(maxsize=32)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256(str(path), stat.st_mtime_ns, stat.st_size)


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class LocalEngine:
    """A llama.cpp server (PyPI wheel ``xllamacpp``) in a child process; use as a context manager."""

    def __init__(self, config: EngineConfig | None = None, log_path: str | os.PathLike | None = None):
        self.config = config or EngineConfig()
        self.url: str | None = None
        self.process: subprocess.Popen | None = None
        self._own_log_dir: tempfile.TemporaryDirectory | None = None
        self._log_path = Path(log_path) if log_path else None
        self._log_handle = None

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def start(self) -> "LocalEngine":
        if self.process is not None:
            raise RuntimeError("LocalEngine already started")
        self.config.check_files()
        if self._log_path is None:
            self._own_log_dir = tempfile.TemporaryDirectory(prefix="speedbench-engine-")
            self._log_path = Path(self._own_log_dir.name) / "server.log"
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_handle = open(self._log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "speedbench.engine.server_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_handle,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            self.process.stdin.write((json.dumps(self.config.to_child_json()) + "\n").encode())
            self.process.stdin.flush()
            deadline = time.monotonic() + self.config.startup_timeout_s
            self.url = self._read_announced_url(deadline)
            self._wait_healthy(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _read_announced_url(self, deadline: float) -> str:
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise EngineStartError(self._failure("did not announce its address in time"))
                if selector.select(timeout=remaining):
                    line = self.process.stdout.readline()
                    if not line:
                        raise EngineStartError(self._failure("exited before listening"))
                    return json.loads(line)["url"]
        finally:
            selector.close()

    def _wait_healthy(self, deadline: float) -> None:
        while True:
            if self.process.poll() is not None:
                raise EngineStartError(self._failure("exited while loading the model"))
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200 and json.loads(response.read()).get("status") == "ok":
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass  # 503 while loading, or not accepting yet
            if time.monotonic() > deadline:
                raise EngineStartError(self._failure("health endpoint never reported ok"))
            time.sleep(_HEALTH_POLL_S)

    def _failure(self, what: str) -> str:
        tail = ""
        if self._log_handle:
            self._log_handle.flush()
        if self._log_path and self._log_path.exists():
            tail = self._log_path.read_text(errors="replace")[-3000:]
        return f"llama.cpp server (xllamacpp) {what}; config={self.config.to_child_json()}\n--- server log tail ---\n{tail}"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server and reap its process; safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            try:
                if process.stdin and not process.stdin.closed:
                    process.stdin.close()  # the child exits at EOF
            except BrokenPipeError:
                pass
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout:
                process.stdout.close()
            self._stopped_pid = process.pid
        if self._log_handle:
            self._log_handle.close()
            self._log_handle = None
        if self._own_log_dir is not None:
            self._own_log_dir.cleanup()
            self._own_log_dir = None
            self._log_path = None

    def __enter__(self) -> "LocalEngine":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- provenance -------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Engine, models (with sha256), versions and options, for a run manifest."""
        config = self.config
        models = {"target": {"path": str(config.target_path), "sha256": file_sha256(config.target_path)}}
        if config.draft_path is not None:
            models["draft"] = {"path": str(config.draft_path), "sha256": file_sha256(config.draft_path)}
        return {
            "engine": "llama.cpp",
            "server": "xllamacpp",
            "engine_version": _package_version("xllamacpp"),
            "url": self.url,
            "speculation": config.speculation,
            "draft_length": config.draft_length if config.speculation != "none" else 0,
            "n_parallel": config.n_parallel,
            "n_ctx": config.total_ctx,
            "models": models,
            "config": asdict(config),
        }
