"""The start-up lifecycle shared by the local engines and the sweep's servers (speedbench.engine.lifecycle)."""
from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time

import pytest

from speedbench.engine.lifecycle import free_port, wait_healthy


class _Exited(Exception):
    pass


class _TimedOut(Exception):
    pass


def _wait(process, url, deadline, **kw):
    wait_healthy(process, url, deadline, exited=_Exited, timed_out=_TimedOut, poll_s=0.01, probe_timeout_s=1, **kw)


def test_a_process_that_exits_is_reported_as_exited():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    with pytest.raises(_Exited):
        _wait(process, f"http://127.0.0.1:{free_port('127.0.0.1')}/health", time.monotonic() + 60)


def test_nothing_listening_past_the_deadline_times_out():
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        with pytest.raises(_TimedOut):
            _wait(process, f"http://127.0.0.1:{free_port('127.0.0.1')}/health", time.monotonic() - 1)
    finally:
        process.stdin.close()
        process.wait()


def test_healthy_decides_on_status_and_body():
    bodies = iter([(503, b""), (200, b'{"status": "loading"}'), (200, b'{"status": "ok"}')])
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, body = next(bodies)
            seen.append(status)
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        _wait(process, f"http://127.0.0.1:{server.server_port}/health", time.monotonic() + 600,
              healthy=lambda status, body: status == 200 and b'"ok"' in body)
        assert seen == [503, 200, 200]  # the 503 and the loading answer were not taken as healthy
    finally:
        server.shutdown()
        process.stdin.close()
        process.wait()
