"""A server's start-up lifecycle, shared by the local engines (``LocalEngine``, vLLM's process)
and the sweep's servers (``speedbench.sweep.server``): a free port, waiting for health.

Standard library only, and no speedbench import: the sweep and the engines import it without the
heavy modules, and vLLM's and SGLang's supervisor (``vllm_process.py``, under their venvs' Python
where speedbench is not importable) loads this file by its path.
"""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Callable

HEALTH_POLL_S = 0.25  # between health probes while the model loads


def free_port(host: str) -> int:
    """A port the OS has just found free on ``host`` (IPv4 or IPv6)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def http_get(url: str, timeout: float) -> tuple[int, bytes]:
    """``(status, body)`` of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def wait_healthy(process: subprocess.Popen, url: str, deadline: float, *,
                 healthy: Callable[[int, bytes], bool] = lambda status, _: status == 200,
                 exited: Callable[[], Exception], timed_out: Callable[[], Exception],
                 probe_timeout_s: float = 5.0, poll_s: float = HEALTH_POLL_S) -> None:
    """Poll ``url`` until ``healthy(status, body)``; raise ``exited()`` if the process ends first
    and ``timed_out()`` once the monotonic ``deadline`` has passed (each caller words its error)."""
    while True:
        if process.poll() is not None:
            raise exited()
        try:
            if healthy(*http_get(url, timeout=probe_timeout_s)):
                return
        except (urllib.error.URLError, OSError, ValueError):
            pass  # not listening yet, or 503 while the model loads
        if time.monotonic() > deadline:
            raise timed_out()
        time.sleep(poll_s)
