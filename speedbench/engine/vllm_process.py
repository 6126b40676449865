"""Supervisor of a ``vllm serve`` process for ``LocalEngine(engine="vllm")``; standard library only.

It runs under the Python of ``.venv-vllm`` (vLLM's pins conflict with ours, so speedbench is not
importable there): ``.venv-vllm/bin/python speedbench/engine/vllm_process.py``. The protocol is
the one of ``server_process.py`` (the llama.cpp child): the first stdin line is a JSON object
``{"argv": [...], "env": {...}, "host": ..., "port": ...}``; the supervisor picks a free port when
``port`` is 0, starts ``vllm serve`` in a session of its own, prints ``{"url": ..., "pid": ...}``
and then blocks reading stdin. When the parent closes stdin or dies (which closes it too), or
sends SIGTERM, the whole vLLM process group (API server and engine core) gets SIGTERM, then
SIGKILL after a grace period. vLLM itself also gets SIGTERM through ``PR_SET_PDEATHSIG`` should
the supervisor be killed outright. SGLang is supervised the same way (under ``.venv-sglang``'s
Python): its request adds ``"python_args"``, the entry point that replaces ``-m vllm ... serve``.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading

GRACE_S = 20.0  # vLLM shuts its engine core down on SIGTERM; a few seconds on a busy machine
_PR_SET_PDEATHSIG = 1


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _stop(process: subprocess.Popen) -> int:
    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent decides
    request = json.loads(sys.stdin.readline())
    host = request["host"]
    port = int(request["port"]) or _free_port(host)
    # What follows the interpreter: `vllm serve` unless the request names another entry point
    # (SGLang: speedbench/engine/sglang_launch.py).
    python_args = request.get("python_args") or ["-m", "vllm.entrypoints.cli.main", "serve"]
    argv = [sys.executable, *python_args, *request["argv"], "--host", host, "--port", str(port)]
    process = subprocess.Popen(argv, env={**os.environ, **request["env"]}, stdin=subprocess.DEVNULL,
                               start_new_session=True, preexec_fn=_die_with_parent)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def _watch_stdin() -> None:
        sys.stdin.read()  # returns at EOF: the parent stopped us or went away
        stop.set()

    def _watch_child() -> None:
        process.wait()  # vLLM exited on its own (bad option, failed load)
        stop.set()

    threading.Thread(target=_watch_stdin, daemon=True).start()
    threading.Thread(target=_watch_child, daemon=True).start()
    shown = f"[{host}]" if ":" in host else host
    print(json.dumps({"url": f"http://{shown}:{port}", "pid": process.pid}), flush=True)
    stop.wait()
    if process.poll() is not None:
        return process.returncode or 1
    _stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
