"""The supervisor SGLang shares with vLLM (``speedbench/engine/vllm_process.py``) leaves no process
of the server's group behind, even when the server's leader exits before its children.

A real SGLang detokenizer once outlived its launcher (ppid 1, still holding a GB). Here the
"server" is a small Python leader that starts a child ignoring SIGTERM (as a busy or stuck
worker would), tells us the child's pid on the shared stdout, then either exits on its own or
waits for the supervisor's SIGTERM. Either way the child must be gone once the supervisor is.
"""
from __future__ import annotations

import json
import subprocess
import sys

import psutil
import pytest

from speedbench.engine.vllm import SUPERVISOR

_CHILD = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); signal.pause()"
_LEADER = f"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {_CHILD!r}], stdout=subprocess.PIPE)
assert child.stdout.readline() == b"ready\\n"
print("child", child.pid, flush=True)
if sys.argv[1] == "exit":
    sys.exit(3)  # the leader goes first; its child stays in the group
import signal
signal.pause()  # until the supervisor's SIGTERM (default action: exit)
"""


def _start(mode: str) -> tuple[subprocess.Popen, int]:
    """The supervisor with the leader above; returns it and the child's pid."""
    supervisor = subprocess.Popen([sys.executable, str(SUPERVISOR)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
    request = {"python_args": ["-c", _LEADER, mode], "argv": [], "env": {}, "host": "127.0.0.1", "port": 0}
    supervisor.stdin.write((json.dumps(request) + "\n").encode())
    supervisor.stdin.flush()
    lines = [supervisor.stdout.readline().decode(), supervisor.stdout.readline().decode()]
    child = next(int(line.split()[1]) for line in lines if line.startswith("child "))
    assert any(json.loads(line).get("url") for line in lines if line.startswith("{")), lines
    return supervisor, child


def _gone(pid: int, timeout_s: float = 60.0) -> bool:
    """Whether ``pid`` ends (a zombie counts as ended); the timeout only bounds a failing test."""
    try:
        process = psutil.Process(pid)
        process.wait(timeout=timeout_s)
        return True
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        gone = process.status() == psutil.STATUS_ZOMBIE
        if not gone:
            process.kill()  # do not leave it running after a failed test
        return gone


def test_a_leader_that_exits_first_leaves_no_child_behind():
    supervisor, child = _start("exit")
    assert supervisor.wait(timeout=60) == 3  # the leader's exit status
    assert _gone(child), "the leader's child outlived the supervisor"


@pytest.mark.parametrize("stop", ["stdin", "sigterm"])
def test_stopping_kills_children_that_ignore_sigterm_once_the_leader_is_gone(stop):
    supervisor, child = _start("wait")
    if stop == "stdin":
        supervisor.stdin.close()  # what LocalEngine.stop does
    else:
        supervisor.terminate()
    # The leader exits on SIGTERM; its child, which ignores SIGTERM, must get SIGKILL.
    assert supervisor.wait(timeout=60) == 0
    assert _gone(child), "a child that ignores SIGTERM outlived the supervisor"
