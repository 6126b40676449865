"""``LocalEngine``: a real llama.cpp, vLLM or SGLang server on 127.0.0.1, started and stopped around a block.

    with LocalEngine(EngineConfig(speculation="draft", draft_length=4, n_parallel=4)) as engine:
        engine.url          # "http://127.0.0.1:PORT" (OpenAI-compatible /v1/completions,
                            #  /health, /tokenize, Prometheus /metrics)
        engine.describe()   # provenance for a run manifest

The server runs in a child process (``speedbench.engine.server_process`` for llama.cpp; for
vLLM, ``vllm_process.py`` under ``.venv-vllm``'s Python, see ``speedbench.engine.vllm``; for
SGLang, the same supervisor under ``.venv-sglang``'s Python, see ``speedbench.engine.sglang``);
readiness is the child's announced URL followed by ``GET /health`` answering 200 (llama.cpp:
``{"status": "ok"}``; SGLang answers 503 until its warm-up request is done). Stopping closes the child's stdin, then escalates to SIGTERM and SIGKILL,
and always reaps the process; a child whose parent dies sees stdin close and stops as well.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, replace
from functools import lru_cache
from importlib import import_module, metadata
from pathlib import Path
from typing import Any

from speedbench import fingerprint
from speedbench.engine.config import EngineConfig
from speedbench.engine.lifecycle import wait_healthy

_HEALTH_POLL_S = 0.05  # between health probes while the model loads
# Labels, timeouts, version routes and how each engine starts: its spec's launcher (speedbench.engines).


class EngineStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


@lru_cache(maxsize=32)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    return fingerprint.file_sha256(path)  # cached per (path, mtime, size): model files run to gigabytes


def file_sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256(str(path), stat.st_mtime_ns, stat.st_size)


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class LocalEngine:
    """A llama.cpp (``xllamacpp``), vLLM or SGLang server in a child process; use as a context manager.

    ``engine`` ("llamacpp", "vllm" or "sglang") overrides ``config.engine``.
    """

    def __init__(self, config: EngineConfig | None = None, log_path: str | os.PathLike | None = None,
                 engine: str | None = None):
        config = config or EngineConfig(engine=engine or "llamacpp")
        if engine is not None and engine != config.engine:
            config = replace(config, engine=engine)  # validated again for that engine
        self.config = config
        self.url: str | None = None
        self.served_models: dict[str, str | None] = {}  # vLLM: the HF folders actually served
        self.server_version: str | None = None
        self._own_work_dir: tempfile.TemporaryDirectory | None = None
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
        command, request = self._child()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_handle,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            deadline = time.monotonic() + self.config.startup_timeout
            self.url = self._read_announced_url(deadline)
            self._wait_healthy(deadline)
            route = self.config.launcher.version_route
            if route:
                with urllib.request.urlopen(f"{self.url}{route}", timeout=10) as response:
                    self.server_version = json.loads(response.read()).get("version")
        except BaseException:
            self.stop()
            raise
        return self

    def _child(self) -> tuple[list[str], dict[str, Any]]:
        """The child's command line and its first stdin line."""
        engine, supervised = self.config.engine, self.config.launcher.supervised
        if supervised is None:
            return [sys.executable, "-m", "speedbench.engine.server_process"], self.config.to_child_json()
        from speedbench.engine import vllm

        module = import_module(supervised)
        python = module.python()
        if self.config.work_dir:
            work_dir = Path(self.config.work_dir)
        else:
            self._own_work_dir = tempfile.TemporaryDirectory(prefix=f"speedbench-{engine}-")
            work_dir = Path(self._own_work_dir.name)
        request = module.serve_request(self.config, work_dir.resolve())
        self.served_models = request.pop("models")
        return [str(python), str(vllm.SUPERVISOR)], request

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
        def healthy(status: int, body: bytes) -> bool:  # vLLM/SGLang: 200 with an empty body
            return status == 200 and (not self.config.launcher.health_says_ok or json.loads(body).get("status") == "ok")

        wait_healthy(self.process, f"{self.url}/health", deadline, healthy=healthy, probe_timeout_s=2,
                     poll_s=_HEALTH_POLL_S,
                     exited=lambda: EngineStartError(self._failure("exited while loading the model")),
                     timed_out=lambda: EngineStartError(self._failure("health endpoint never reported ok")))

    def _failure(self, what: str) -> str:
        tail = ""
        if self._log_handle:
            self._log_handle.flush()
        if self._log_path and self._log_path.exists():
            tail = self._log_path.read_text(errors="replace")[-3000:]
        return f"{self.config.launcher.label} {what}; config={self.config.to_child_json()}\n--- server log tail ---\n{tail}"

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the server and reap its process; safe to call twice."""
        timeout_s = timeout_s if timeout_s is not None else self.config.launcher.stop_timeout_s
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
        if self._own_work_dir is not None:
            self._own_work_dir.cleanup()
            self._own_work_dir = None

    def __enter__(self) -> "LocalEngine":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- provenance -------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Engine, models (with sha256), versions and options, for a run manifest."""
        config = self.config
        if config.launcher.hf_models:
            return self._describe_hf()
        models = {"target": {"path": str(config.target_path), "sha256": file_sha256(config.target_path)}}
        if config.draft_path is not None:
            models["draft"] = {"path": str(config.draft_path), "sha256": file_sha256(config.draft_path)}
        return {
            "engine": "llama.cpp",
            "server": config.launcher.server,
            "engine_version": _package_version("xllamacpp"),
            "url": self.url,
            "speculation": config.speculation,
            "draft_length": config.draft_length if config.speculation != "none" else 0,
            "n_parallel": config.n_parallel,
            "n_ctx": config.total_ctx,
            "models": models,
            **config.variable_depth,
            "config": asdict(config),
        }

    def _describe_hf(self) -> dict[str, Any]:
        """vLLM and SGLang: the llama2.c checkpoint converted to HF folders (``hf_llama``)."""
        config = self.config

        def model(source: Path | None, served: str | None, note: str) -> dict[str, Any]:
            entry: dict[str, Any] = {"path": str(source) if source else None, "served": served, "derived": note}
            if source is not None and source.is_file():
                entry["sha256"] = file_sha256(source)
            return entry

        models = {"target": model(config.target_path, self.served_models.get("target"),
                                  "hf_llama.convert" if config.target_path.is_file() else "")}
        if config.uses_draft_model:
            derived = "hf_llama.convert q4_0 of the target" if config.draft is None else "hf_llama.convert"
            models["draft"] = model(config.draft_path or config.target_path, self.served_models.get("draft"), derived)
        return {
            "engine": config.engine,
            "server": config.launcher.server,
            "engine_version": self.server_version,
            "url": self.url,
            "speculation": config.speculation,
            "draft_length": config.draft_length if config.speculation != "none" else 0,
            "n_parallel": config.n_parallel,
            "n_ctx": config.max_model_len,
            "models": models,
            **config.variable_depth,
            "config": asdict(config),
        }
