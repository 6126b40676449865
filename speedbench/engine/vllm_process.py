"""Supervisor of a ``vllm serve`` process for ``LocalEngine(engine="vllm")``; standard library only.

It runs under the Python of ``.venv-vllm`` (vLLM's pins conflict with ours, so speedbench is not
importable there): ``.venv-vllm/bin/python speedbench/engine/vllm_process.py``. The protocol is
the one of ``server_process.py`` (the llama.cpp child): the first stdin line is a JSON object
``{"argv": [...], "env": {...}, "host": ..., "port": ...}``; the supervisor picks a free port when
``port`` is 0, starts ``vllm serve`` in a session of its own with its stdout and stderr both on the
supervisor's stderr (the log), prints ``{"url": ..., "pid": ...}`` and then blocks reading stdin. When the parent closes stdin or dies (which closes it too), or
sends SIGTERM, the whole vLLM process group (API server and engine core) gets SIGTERM, then
SIGKILL after a grace period; whatever is left of the group when the server's leader exits (on
its own or after SIGTERM) gets SIGKILL too. vLLM itself also gets SIGTERM through
``PR_SET_PDEATHSIG`` should the supervisor be killed outright. SGLang is supervised the same way
(under ``.venv-sglang``'s Python): its request adds ``"python_args"``, the entry point that
replaces ``-m vllm ... serve``.
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

GRACE_S = 20.0  # vLLM shuts its engine core down on SIGTERM; a few seconds on a busy machine
_PR_SET_PDEATHSIG = 1


def _lifecycle():
    """``speedbench/engine/lifecycle.py`` (the one free-port rule), loaded by its path: speedbench is
    not importable under ``.venv-vllm``'s Python, and that module is standard library only."""
    spec = importlib.util.spec_from_file_location("speedbench_lifecycle", Path(__file__).with_name("lifecycle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the whole group is gone


def _stop(process: subprocess.Popen) -> int:
    """SIGTERM to the group; after the grace period, or as soon as the leader has exited, SIGKILL
    to what is left of it. The leader may exit first and leave children behind (an SGLang
    detokenizer outlived its launcher that way), so the group is swept either way."""
    _kill_group(process.pid, signal.SIGTERM)
    try:
        code = process.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        code = None
    _kill_group(process.pid, signal.SIGKILL)
    return process.wait() if code is None else code


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent decides
    request = json.loads(sys.stdin.readline())
    host = request["host"]
    port = int(request["port"]) or _lifecycle().free_port(host)
    # What follows the interpreter: `vllm serve` unless the request names another entry point
    # (SGLang: speedbench/engine/sglang_launch.py).
    python_args = request.get("python_args") or ["-m", "vllm.entrypoints.cli.main", "serve"]
    argv = [sys.executable, *python_args, *request["argv"], "--host", host, "--port", str(port)]
    # The server's stdout joins its stderr (the log): the parent reads only the announcement line
    # from ours, so a server writing there (uvicorn's access log, one line per /health poll or
    # request) would fill the pipe and block; SGLang's warm-up hung that way.
    process = subprocess.Popen(argv, env={**os.environ, **request["env"]}, stdin=subprocess.DEVNULL,
                               stdout=sys.stderr.fileno(), start_new_session=True, preexec_fn=_die_with_parent)
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
        _kill_group(process.pid, signal.SIGKILL)  # what the leader left behind, if anything
        return process.returncode or 1
    _stop(process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
