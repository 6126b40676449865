"""Connections that never send a request cannot hold the Space (issue 32): one that dribbles its
request head is closed after the head deadline, idle ones past the open-connection cap are closed,
and a request whose head arrived is never cut by this guard (its slow body gets the request
guard's 408). The real app (``space/app.py``'s ``serve``, as ``main`` runs it) on a 127.0.0.1 port,
raw sockets as the clients; every wait is on the server closing or answering, with a generous bound."""
from __future__ import annotations

import runpy
import shutil
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

web = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))
BOUND_S = 120  # generous: the guard acts within its deadline + 1 s on an idle machine
if str(web["SPACE_DIR"]) not in sys.path:
    sys.path.insert(0, str(web["SPACE_DIR"]))


@pytest.fixture
def space(tmp_path, seeded_db_template, known_builds_dir):
    """``start(**guard limits)`` -> (port, demo, connection guard), served as ``main`` serves it."""
    started = []

    def start(**guard):
        app = web["app_module"]()
        from sbspace.envs import Settings
        from sbspace.guard import GuardLimits

        db = tmp_path / "board.sqlite3"
        shutil.copyfile(seeded_db_template, db)
        port = web["free_port"]()
        settings = Settings(db_path=db, host="127.0.0.1", port=port, known_builds=[str(known_builds_dir)],
                            guard=GuardLimits(**guard))
        demo = app.build_app(settings)
        watcher = app.serve(demo, settings, quiet=True)
        started.append(demo)
        return port, demo, watcher

    yield start
    for demo in started:
        demo.close()
        demo.store.close()


def _closed_by_server(conn: socket.socket, dribble: bytes = b"") -> bytes:
    """Send ``dribble`` a byte at a time (each after waiting up to 0.2 s for the server to close)
    until the server closes the connection; returns what it sent back (b"" for a plain close).
    Fails after ``BOUND_S``."""
    deadline = time.monotonic() + BOUND_S
    received, position = b"", 0
    while time.monotonic() < deadline:
        conn.settimeout(0.2)
        try:
            chunk = conn.recv(4096)
        except socket.timeout:
            if dribble:
                try:
                    conn.sendall(dribble[position % len(dribble):position % len(dribble) + 1])
                except (BrokenPipeError, ConnectionResetError):
                    return received
                position += 1
            continue
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    pytest.fail(f"the server did not close the connection within {BOUND_S} s")


def _still_open(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return conn.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        conn.setblocking(True)


def test_a_request_head_dribbled_a_byte_at_a_time_is_closed_unanswered(space):
    port, _, watcher = space(header_timeout_s=2.0)
    conn = socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)
    conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    assert _closed_by_server(conn, dribble=b"X-Slow: " + b"a" * 64 + b"\r\n") == b""
    assert time.monotonic() - started >= 2.0  # never before its deadline
    assert watcher.closed >= 1
    conn.close()
    # the server still serves everyone else
    assert httpx.get(f"http://127.0.0.1:{port}/gradio_api/info", timeout=BOUND_S).status_code == 200


def test_a_request_whose_head_arrived_is_left_to_the_body_deadline(space):
    """Past the head deadline but within its request: the request guard answers 408, this guard
    never cut it (a plain close would read as b"")."""
    port, _, _ = space(header_timeout_s=1.0, body_timeout_s=4.0)
    conn = socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)
    conn.sendall(b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n"
                 b"Content-Type: multipart/form-data; boundary=x\r\n\r\n--x\r\n")
    assert _closed_by_server(conn).startswith(b"HTTP/1.1 408 ")
    conn.close()


def _poll(predicate) -> bool:
    deadline = time.monotonic() + BOUND_S
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a condition, not a wait standing in for one
    return predicate()


def test_past_the_open_connection_cap_the_idle_connections_are_closed(space):
    port, demo, watcher = space(header_timeout_s=600.0, max_open_connections=4)
    # launch's own check of the page used a keep-alive connection: uvicorn closes it when idle
    assert _poll(lambda: not demo.server.server_state.connections)
    conns = [socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) for _ in range(8)]
    try:
        assert _poll(lambda: sum(not _still_open(c) for c in conns) >= 4)
        closed = [c for c in conns if not _still_open(c)]
        assert len(closed) == 4 and watcher.closed == 4  # back at the cap; the others are kept
        for conn in closed:
            assert _closed_by_server(conn) == b""
    finally:
        for conn in conns:
            conn.close()
