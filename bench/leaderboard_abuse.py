"""The leaderboard Space under abuse, through HTTP (issue 32; called by ``bench/leaderboard_load.py --abuse``).

Against a fresh ``python space/app.py`` (as a Space runs it: ``main``, with the request guard and the
connection guard), two parts:

1. **search flood**: eight concurrent 4 MiB searches sent as the browser sends the search box's
   change event (``/gradio_api/queue/join``): the app's CPU seconds for them alone (and, for scale,
   one upload's answer time and CPU without them); then the same
   eight again with an upload (a typical 880-prompt bundle through ``/submit_bundle``) sent
   meanwhile: the time the upload took to be answered and the app's CPU for all of it; and a real
   search (one word of one model's name) with the rows it returns out of the board's.
2. **abuse mix** for ``seconds``: uploads dropped after half their declared body (two clients,
   back to back), slow bodies (one byte a second on 16 connections, reopened when answered), slow
   request heads (one byte a second on 16 connections, reopened when closed) and a search flood
   (two clients, back to back); every 5 s the upload folder's size and file count, the app's
   open file descriptors and RSS, and the time one upload takes to be answered. Then the abuse
   stops and the folder is sampled again once the sweep's age has passed.

The app runs with shorter bounds than a Space's defaults so the run sees each act (printed).
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

MiB = 2**20
ABUSE_ENV = {"SPEEDBENCH_UPLOAD_MAX_AGE_S": "30", "SPEEDBENCH_BODY_TIMEOUT_S": "20",
             "SPEEDBENCH_HEADER_TIMEOUT_S": "10", "SPEEDBENCH_UPLOADS_PER_HOUR": "1000"}
FLOOD = "q" * (4 * MiB)


def _proc(pid: int) -> tuple[float, float, int]:
    """(app CPU seconds, RSS MiB, open file descriptors)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    rss = int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), rss, len(os.listdir(f"/proc/{pid}/fd"))


def _folder(folder: Path) -> tuple[float, int]:
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    return sum(p.stat().st_size for p in files if p.exists()) / MiB, len(files)


def search_index(url: str) -> int:
    config = httpx.get(f"{url}config", timeout=60).json()
    box = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "search")
    return next(d["id"] for d in config["dependencies"] if [box, "change"] in [list(t) for t in d["targets"]])


def search(url: str, index: int, text: str) -> int:
    """One search as the browser sends it; returns the rows the board shows (minus the HTTP status
    when the app refused it: -413 for a body over its cap)."""
    session = uuid.uuid4().hex[:11]
    data = [text, [], [], [], "any", "Mean AL", True, False]
    joined = httpx.post(f"{url}gradio_api/queue/join", json={"data": data, "fn_index": index,
                                                             "session_hash": session, "event_data": None,
                                                             "trigger_id": None}, timeout=600)
    if joined.status_code != 200:
        return -joined.status_code
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=600) as rsp:
        for line in rsp.iter_lines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                return len(message["output"]["data"][0]["value"]["data"]) if message.get("success") else -1
    return -1


def upload(url: str, path: Path) -> tuple[float, str]:
    from gradio_client import Client, handle_file

    start = time.perf_counter()
    client = Client(url, verbose=False, analytics_enabled=False, download_files=False)
    answer = client.predict(handle_file(str(path)), api_name="/submit_bundle")
    return time.perf_counter() - start, answer["status"]


def search_flood(url: str, pid: int, typical: list[Path], model_word: str) -> None:
    index = search_index(url)
    total = search(url, index, "")
    cpu = _proc(pid)[0]
    alone_upload, status = upload(url, typical[1])  # the same upload's time without a flood, for scale
    upload_cpu = _proc(pid)[0] - cpu
    print(f"an upload alone: answered in {alone_upload:.2f} s ({status}), app CPU {upload_cpu:.2f} s")
    cpu = _proc(pid)[0]
    with ThreadPoolExecutor(8) as pool:
        shown = list(pool.map(lambda _: search(url, index, FLOOD), range(8)))
    alone = _proc(pid)[0] - cpu
    cpu = _proc(pid)[0]
    with ThreadPoolExecutor(9) as pool:
        flood = [pool.submit(search, url, index, FLOOD) for _ in range(8)]
        sent = pool.submit(upload, url, typical[0])
        answered, status = sent.result()
        [f.result() for f in flood]
    together = _proc(pid)[0] - cpu
    real = search(url, index, model_word)
    print(f"search flood: eight concurrent 4 MiB searches {alone:.2f} s app CPU (rows shown, or -HTTP status: "
          f"{sorted(set(shown))}); "
          f"again with an upload sent meanwhile: upload answered in {answered:.2f} s ({status}), app CPU for all "
          f"{together:.2f} s; a real search ({model_word!r}) shows {real} of {total} rows")


def _raw(port: int, head: bytes) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn.sendall(head)
    conn.setblocking(False)
    return conn


def _upload_head(declared: int) -> bytes:
    return (f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {declared}\r\n"
            "Content-Type: multipart/form-data; boundary=xB\r\n\r\n--xB\r\nContent-Disposition: form-data; "
            'name="files"; filename="b.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n').encode()


def _abusers(port: int, url: str, stop: threading.Event, counts: dict) -> list[threading.Thread]:
    def aborted():
        while not stop.is_set():
            try:
                conn = _raw(port, _upload_head(8 * MiB))
                conn.setblocking(True)
                conn.sendall(b"\0" * (4 * MiB))
                conn.close()
                counts["aborted uploads"] += 1
            except OSError:
                counts["refused"] += 1

    def dribblers(kind: str, head: bytes, byte: bytes):
        conns = [None] * 16
        while not stop.wait(1.0):  # one byte a second on each
            for i, conn in enumerate(conns):
                try:
                    if conn is None:
                        conns[i] = _raw(port, head)
                        counts[kind] += 1
                        continue
                    if conn.recv(4096) == b"":  # answered or closed by the server: reopen
                        raise ConnectionResetError
                except BlockingIOError:
                    try:
                        conn.send(byte)
                    except OSError:
                        conn.close()
                        conns[i] = None
                except OSError:
                    if conn is not None:
                        conn.close()
                    conns[i] = None
        for conn in conns:
            if conn is not None:
                conn.close()

    def flood():
        index = search_index(url)
        while not stop.is_set():
            search(url, index, FLOOD)
            counts["flood searches"] += 1

    targets = [aborted, aborted, flood, flood,
               lambda: dribblers("slow bodies", _upload_head(MiB), b"\0"),
               lambda: dribblers("slow heads", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"a")]
    return [threading.Thread(target=t, daemon=True) for t in targets]


def abuse_mix(url: str, port: int, pid: int, folder: Path, typical: list[Path], seconds: float) -> None:
    print(f"abuse mix for {seconds:g} s, app bounds {ABUSE_ENV}")
    stop, counts = threading.Event(), {k: 0 for k in ("aborted uploads", "refused", "slow bodies", "slow heads",
                                                      "flood searches")}
    threads = _abusers(port, url, stop, counts)
    for thread in threads:
        thread.start()
    start, n = time.monotonic(), 1
    while time.monotonic() - start < seconds:
        answered, status = upload(url, typical[n % len(typical)])
        n += 1
        size, files = _folder(folder)
        cpu, rss, fds = _proc(pid)
        print(f"  t={time.monotonic() - start:5.1f} s  upload folder {size:7.1f} MiB in {files:3d} files  app fds "
              f"{fds:4d}  RSS {rss:5.0f} MiB  CPU {cpu:7.1f} s  an upload answered in {answered:5.2f} s ({status})  "
              f"{counts}  load {os.getloadavg()[0]:.2f}", flush=True)
        stop.wait(max(0.0, 5.0 - answered))
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    settle = float(ABUSE_ENV["SPEEDBENCH_UPLOAD_MAX_AGE_S"]) * 1.25 + 5
    time.sleep(settle)  # a benchmark waiting out the sweep's age, not a test
    size, files = _folder(folder)
    print(f"  abuse stopped; {settle:g} s later: upload folder {size:.1f} MiB in {files} files, app fds "
          f"{_proc(pid)[2]}")
