"""Upload bytes cannot fill the disk, slow clients cannot hold the server (issue 32): an upload
dropped mid-body leaves a file Gradio never registered, which the app's sweep removes by age; a
body that does not arrive in time is answered 408; past the cap on requests in flight the app
answers 503. Against the real app on a 127.0.0.1 port, with raw sockets as the hostile clients."""
from __future__ import annotations

import json
import os
import runpy
import shutil
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

web = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))
DEADLINE_S = 120
if str(web["SPACE_DIR"]) not in sys.path:
    sys.path.insert(0, str(web["SPACE_DIR"]))


def _space(tmp_path, seeded_db_template, known_builds_dir, **guard):
    app = web["app_module"]()
    from sbspace.envs import Settings
    from sbspace.guard import GuardLimits

    db = tmp_path / "board.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    port = web["free_port"]()
    settings = Settings(db_path=db, port=port, known_builds=[str(known_builds_dir)], guard=GuardLimits(**guard))
    demo = app.build_app(settings)
    demo.queue(default_concurrency_limit=8).launch(server_name="127.0.0.1", server_port=port,
                                                     prevent_thread_lock=True, quiet=True,
                                                     **app.launch_options(settings))
    return port, demo


def _partial_upload(port: int, declared: int, sent: bytes) -> socket.socket:
    """A multipart POST to /gradio_api/upload that declares ``declared`` body bytes and sends ``sent``."""
    boundary = "xBOUNDARYx"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="b.tar.gz"\r\n'
            "Content-Type: application/gzip\r\n\r\n").encode()
    conn = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    conn.sendall((f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {declared}\r\n"
                  f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n").encode() + head + sent)
    return conn


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


def _poll(predicate, timeout: float = DEADLINE_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)  # polling a condition, not a wait standing in for one
    return predicate()


def test_sweep_removes_old_files_not_in_use_and_empty_folders(tmp_path):
    from sbspace.guard import sweep_uploads

    now = 10_000.0
    old, young, busy = tmp_path / "a" / "old.tar.gz", tmp_path / "young.tar.gz", tmp_path / "busy.tar.gz"
    old.parent.mkdir()
    for path, age in ((old, 121), (young, 119), (busy, 500)):
        path.write_bytes(b"x")
        os.utime(path, (now - age, now - age))
    os.utime(old.parent, (now - 500, now - 500))
    removed = sweep_uploads(tmp_path, 120, lambda: [busy], now=now)
    assert removed == [old]
    assert not old.parent.exists() and young.exists() and busy.exists()


def test_an_upload_dropped_mid_body_is_swept_and_a_slow_body_is_answered_408(
        tmp_path, seeded_db_template, known_builds_dir):
    from sbspace import submission
    from sbspace.guard import sweep_uploads

    folder = submission.upload_cache_dir()
    orphan = folder / f"pending-at-a-crash-{os.getpid()}" / "bundle.tar.gz"  # an upload left by a killed app
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"\0" * 1024)
    os.utime(orphan, (time.time() - 3600, time.time() - 3600))
    port, demo = _space(tmp_path, seeded_db_template, known_builds_dir, body_timeout_s=3.0)
    try:
        assert not orphan.exists()  # swept at start-up
        before = _files(folder)
        conn = _partial_upload(port, 8 * 2**20, b"\0" * 2**20)  # 1 MiB of a declared 8 MiB, then gone
        assert _poll(lambda: any(p.stat().st_size >= 2**20 for p in _files(folder) - before))
        conn.close()
        left = _files(folder) - before
        assert left  # Gradio keeps the part it wrote (it never registered the file)
        # the app's sweep at its age (now + max age: no waiting two minutes)
        removed = sweep_uploads(folder, demo.sweeper.max_age_s, submission.files_in_use,
                                now=time.time() + demo.sweeper.max_age_s + 1)
        assert left <= set(removed) and not (left & _files(folder))

        slow = _partial_upload(port, 2**20, b"\0" * 10)  # and then nothing: a slow-loris body
        answer = slow.recv(4096)  # blocks until the guard answers (socket timeout: DEADLINE_S)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
        slow.close()
    finally:
        demo.close()
        demo.store.close()


def test_past_the_cap_requests_are_answered_503_and_served_again_after(tmp_path, seeded_db_template,
                                                                       known_builds_dir):
    port, demo = _space(tmp_path, seeded_db_template, known_builds_dir, max_in_flight=3, body_timeout_s=600.0)
    url = f"http://127.0.0.1:{port}/"
    held = []
    try:
        assert httpx.get(url, timeout=60).status_code == 200
        held = [_partial_upload(port, 2**20, b"\0" * 10) for _ in range(3)]  # three bodies that never end
        assert _poll(lambda: httpx.get(f"{url}gradio_api/info", timeout=60).status_code == 503)
        answer = httpx.get(f"{url}gradio_api/info", timeout=60)
        assert answer.status_code == 503 and "too many connections" in answer.text
        for conn in held:
            conn.close()
        assert _poll(lambda: httpx.get(f"{url}gradio_api/info", timeout=60).status_code == 200)
    finally:
        for conn in held:
            conn.close()
        demo.close()
        demo.store.close()


def test_the_about_tab_states_the_bounds_this_space_runs_under():
    from sbspace import about
    from sbspace.guard import GuardLimits
    from speedbench.leaderboard.admission import Budget
    from speedbench.leaderboard.archive import ArchiveLimits

    text = " ".join(about.promises(ArchiveLimits(), Budget(), 6, GuardLimits(10, 30.0, 90.0, 15.0, 99), 7).split())
    assert "not sent its request head within 15 s is closed" in text and "past 99 open connections" in text
    assert "may send 7 uploads an hour" in text
    assert "deleted once it is 90 s old" in text and "within 30 s" in text and "at most 10 requests" in text
    assert "2 hours" not in text


def test_uploads_past_the_submitter_s_quota_are_refused_before_they_are_read(tmp_path, seeded_db_template,
                                                                             known_builds_dir, valid_bundle):
    """Through the /submit_bundle API from one address: two uploads pass, the third is refused."""
    from gradio_client import handle_file
    from sbspace.envs import Settings

    app = web["app_module"]()
    db = tmp_path / "board.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    port = web["free_port"]()
    demo = app.build_app(Settings(db_path=db, port=port, known_builds=[str(known_builds_dir)], uploads_per_hour=2))
    url = web["launch"](demo, port)
    try:
        api = web["client"](url)
        path = tmp_path / "bundle.tar.gz"
        path.write_bytes(valid_bundle)
        answers = [api.predict(handle_file(str(path)), api_name="/submit_bundle") for _ in range(3)]
        assert [a["status"] for a in answers] == ["accepted", "rejected", "rejected"]
        assert "duplicate" in answers[1]["message"]  # the second was read (within the quota)
        assert "[rule quota.uploads]" in answers[2]["message"] and "at most 2 uploads per hour" in answers[2]["message"]
    finally:
        demo.close()
        demo.store.close()


def test_a_4_mib_search_is_refused_413_unread_and_a_real_search_still_filters(tmp_path, seeded_db_template,
                                                                                known_builds_dir):
    """Every request body but an upload's is at most max_body_bytes: the search flood's 4 MiB JSON is
    answered 413 by its Content-Length, and one sent without a length once past the cap."""
    port, demo = _space(tmp_path, seeded_db_template, known_builds_dir, max_body_bytes=64 * 1024)
    url = f"http://127.0.0.1:{port}/"
    try:
        index = next(i for i, f in demo.fns.items() if f.name == "table")
        flood = {"data": ["q" * (4 * 2**20), [], [], [], "any", "Mean AL", True, False], "fn_index": index,
                 "session_hash": "flood", "event_data": None, "trigger_id": None}
        answer = httpx.post(f"{url}gradio_api/queue/join", json=flood, timeout=DEADLINE_S)
        assert answer.status_code == 413 and "over 65536 bytes" in answer.text

        body = json.dumps(flood).encode()
        chunks = (body[i:i + 2**16] for i in range(0, len(body), 2**16))  # no Content-Length: chunked
        answer = httpx.post(f"{url}gradio_api/queue/join", content=chunks,
                            headers={"content-type": "application/json"}, timeout=DEADLINE_S)
        assert answer.status_code == 413

        model = demo.store.entries()[0].metadata["model"]
        expected = sorted(e.id for e in demo.store.entries() if model in e.metadata["model"])
        frame = web["ui_call"](url, index, [model, [], [], [], "any", "Mean AL", True, False])[0]["value"]
        column = frame["headers"].index("Entry")
        assert sorted(r[column] for r in frame["data"]) == expected and 0 < len(expected) < demo.store.count()
    finally:
        demo.close()
        demo.store.close()
