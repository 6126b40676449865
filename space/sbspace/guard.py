"""The Space's own bounds on HTTP requests and on Gradio's upload folder (issue 32).

- :class:`RequestGuard` (ASGI middleware, passed to Gradio's FastAPI app by ``launch``): at most
  ``max_in_flight`` requests at once (more are answered 503 at once and their connection closed:
  600 clients sending one byte a second held 1,200 file descriptors), and a request body must
  arrive within ``body_timeout_s`` in all (a slow body is answered 408 and dropped; Gradio keeps
  the part it wrote, which the sweep removes). Long-lived requests without a body (the queue's
  event stream) are not held to the body deadline, only to the cap.
- :func:`sweep_uploads` / :class:`UploadSweeper`: every file in the upload folder older than
  ``max_age_s`` (by its last write) that no submission is using is deleted, at start-up and then
  every ``max_age_s / 4``: an upload dropped mid-body (Gradio never registered it, so its own
  cache sweep never removes it), one never submitted, and those pending at a crash are gone
  within ``max_age_s + max_age_s / 4``.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GuardLimits:
    max_in_flight: int = 64  # SPEEDBENCH_MAX_CONNECTIONS
    body_timeout_s: float = 120.0  # SPEEDBENCH_BODY_TIMEOUT_S: 64 MiB at 0.55 MB/s
    upload_max_age_s: float = 120.0  # SPEEDBENCH_UPLOAD_MAX_AGE_S
    header_timeout_s: float = 20.0  # SPEEDBENCH_HEADER_TIMEOUT_S (sbspace/connections.py)
    max_open_connections: int = 256  # SPEEDBENCH_MAX_OPEN_CONNECTIONS (sbspace/connections.py)
    max_body_bytes: int = 256 * 1024  # SPEEDBENCH_MAX_REQUEST_KB: every body but an upload's

    @classmethod
    def from_env(cls) -> "GuardLimits":
        return cls(int(settings.leaderboard_limit("SPEEDBENCH_MAX_CONNECTIONS", cls.max_in_flight, int)),
                   settings.leaderboard_limit("SPEEDBENCH_BODY_TIMEOUT_S", cls.body_timeout_s),
                   settings.leaderboard_limit("SPEEDBENCH_UPLOAD_MAX_AGE_S", cls.upload_max_age_s),
                   settings.leaderboard_limit("SPEEDBENCH_HEADER_TIMEOUT_S", cls.header_timeout_s),
                   int(settings.leaderboard_limit("SPEEDBENCH_MAX_OPEN_CONNECTIONS", cls.max_open_connections, int)),
                   int(settings.leaderboard_limit("SPEEDBENCH_MAX_REQUEST_KB", cls.max_body_bytes / 1024) * 1024))


async def _plain(send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """ASGI middleware: a cap on requests in flight and a deadline on each request body."""

    def __init__(self, app, max_in_flight: int = GuardLimits.max_in_flight,
                 body_timeout_s: float = GuardLimits.body_timeout_s, max_body_bytes: int = GuardLimits.max_body_bytes):
        self.app, self.max_in_flight, self.body_timeout_s = app, max_in_flight, body_timeout_s
        self.max_body_bytes = max_body_bytes
        self.in_flight = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.in_flight >= self.max_in_flight:
            return await _plain(send, 503, "too many connections; try again shortly")
        self.in_flight += 1  # one event loop: no lock needed
        try:
            await self._guarded(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _guarded(self, scope, receive, send) -> None:
        """The app with a body deadline: past it the guard answers 408 and tells the app the client
        left (its later messages are dropped)."""
        deadline = time.monotonic() + self.body_timeout_s
        state = {"body_done": False, "answered": False, "started": False, "bytes": 0}
        # an upload's size is Gradio's max_file_size; any other body (an event's JSON) is small
        cap = None if scope.get("path", "").endswith("/upload") else self.max_body_bytes
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if cap is not None and declared.isdigit() and int(declared) > cap:
            return await _plain(send, 413, f"request body over {cap} bytes")  # never read

        async def receive_with_deadline():
            if state["body_done"]:  # the body was read: wait for the disconnect without a deadline
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                state["body_done"] = True
                if not state["started"]:  # else the app answered already: only tell it the client left
                    state["answered"] = True
                    await _plain(send, 408, f"request body not received within {self.body_timeout_s:g} s")
                return {"type": "http.disconnect"}
            if message.get("type") != "http.request" or not message.get("more_body", False):
                state["body_done"] = True
            state["bytes"] += len(message.get("body", b""))
            if cap is not None and state["bytes"] > cap and not state["started"]:  # a body sent without its length
                state["body_done"] = state["answered"] = True
                await _plain(send, 413, f"request body over {cap} bytes")
                return {"type": "http.disconnect"}
            return message

        async def send_unless_answered(message):
            if not state["answered"]:
                state["started"] = True
                await send(message)

        await self.app(scope, receive_with_deadline, send_unless_answered)


def sweep_uploads(folder: Path, max_age_s: float, in_use: Callable[[], Iterable[Path]],
                  now: float | None = None) -> list[Path]:
    """Delete every file under ``folder`` last written more than ``max_age_s`` ago and not in
    ``in_use()``, then the folders left empty; returns the files deleted."""
    now = time.time() if now is None else now
    if not folder.is_dir():
        return []
    busy = {Path(p).resolve() for p in in_use()}
    removed, emptied = [], set()
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        try:
            if path.is_symlink() or path.is_file():
                if path.resolve() not in busy and now - path.lstat().st_mtime > max_age_s:
                    path.unlink(missing_ok=True)
                    removed.append(path)
                    emptied.add(path.parent)
            elif path.is_dir() and not any(path.iterdir()) and (
                    path in emptied or now - path.stat().st_mtime > max_age_s):
                path.rmdir()  # one this sweep emptied, or old: never one Gradio is about to fill
                emptied.add(path.parent)
        except OSError:  # removed meanwhile (a submission finished): nothing to do
            continue
    return removed


class UploadSweeper:
    """:func:`sweep_uploads` at start and every ``max_age_s / 4`` in a daemon thread."""

    def __init__(self, folder: Path, max_age_s: float, in_use: Callable[[], Iterable[Path]]):
        self.folder, self.max_age_s, self.in_use = folder, max_age_s, in_use
        self._stop = threading.Event()
        self.sweeps = 0

    def sweep(self) -> list[Path]:
        removed = sweep_uploads(self.folder, self.max_age_s, self.in_use)
        self.sweeps += 1
        if removed:
            log.info("removed %d stale upload file(s)", len(removed))
        return removed

    def start(self) -> "UploadSweeper":
        self.sweep()  # at start-up: uploads pending at a crash
        threading.Thread(target=self._run, name="speedbench-upload-sweep", daemon=True).start()
        return self

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.max_age_s / 4):
            try:
                self.sweep()
            except Exception:  # never a dead thread
                log.exception("upload sweep failed")
