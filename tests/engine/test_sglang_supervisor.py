"""The supervisor SGLang shares with vLLM (``speedbench/engine/vllm_process.py``): it leaves no
process of the server's group behind, even when the server's leader exits before its children,
and a server that writes a lot to its stdout never blocks on it.

A real SGLang detokenizer once outlived its launcher (ppid 1, still holding a GB). Here the
"server" is a small Python leader that starts a child ignoring SIGTERM (as a busy or stuck
worker would), tells us the child's pid on its stderr (the log), then either exits on its own or
waits for the supervisor's SIGTERM. Either way
the child must be gone once the supervisor is. And a real SGLang hung in its warm-up because its
access log (on stdout) filled the pipe that only the announcement line is read from.
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
if sys.argv[1] == "chatty":
    sys.stdout.write("x" * 1_000_000)  # far more than a pipe holds
    sys.stdout.flush()
    sys.exit(4)
child = subprocess.Popen([sys.executable, "-c", {_CHILD!r}], stdout=subprocess.PIPE)
assert child.stdout.readline() == b"ready\\n"
print("child", child.pid, file=sys.stderr, flush=True)
if sys.argv[1] == "exit":
    sys.exit(3)  # the leader goes first; its child stays in the group
import signal
signal.pause()  # until the supervisor's SIGTERM (default action: exit)
"""


@pytest.fixture
def spawned():
    """Pids a test started; whatever of them is still running after the test (a failed one) is
    killed, so a failing test leaves nothing behind."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def _start(mode: str, spawned: list[int]) -> tuple[subprocess.Popen, int]:
    """The supervisor with the leader above; returns it and the child's pid."""
    supervisor = subprocess.Popen([sys.executable, str(SUPERVISOR)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    request = {"python_args": ["-c", _LEADER, mode], "argv": [], "env": {}, "host": "127.0.0.1", "port": 0}
    supervisor.stdin.write((json.dumps(request) + "\n").encode())
    supervisor.stdin.flush()
    announced = json.loads(supervisor.stdout.readline())  # the supervisor's stdout: this line only
    spawned += [supervisor.pid, announced["pid"]]
    assert announced["url"].startswith("http://127.0.0.1:") and announced["pid"] > 0
    line = supervisor.stderr.readline().decode()  # the server's stderr is the log
    assert line.startswith("child "), line
    spawned.append(int(line.split()[1]))
    return supervisor, int(line.split()[1])


def test_a_server_writing_much_to_stdout_does_not_block(spawned):
    """With the server's stdout on the parent's pipe, 1 MB would block the leader forever (the
    parent reads one line); on the log it is written and the leader exits with its own status."""
    supervisor = subprocess.Popen([sys.executable, str(SUPERVISOR)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    request = {"python_args": ["-c", _LEADER, "chatty"], "argv": [], "env": {}, "host": "127.0.0.1", "port": 0}
    supervisor.stdin.write((json.dumps(request) + "\n").encode())
    supervisor.stdin.flush()
    announced = json.loads(supervisor.stdout.readline())
    spawned += [supervisor.pid, announced["pid"]]
    assert supervisor.wait(timeout=120) == 4
    assert supervisor.stdout.read() == b""  # nothing but the announcement on the supervisor's stdout


def _gone(pid: int, timeout_s: float = 60.0) -> bool:
    """Whether ``pid`` ends (a zombie counts as ended); the timeout only bounds a failing test."""
    try:
        process = psutil.Process(pid)
        process.wait(timeout=timeout_s)
        return True
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return process.status() == psutil.STATUS_ZOMBIE


def test_a_leader_that_exits_first_leaves_no_child_behind(spawned):
    supervisor, child = _start("exit", spawned)
    assert supervisor.wait(timeout=60) == 3  # the leader's exit status
    assert _gone(child), "the leader's child outlived the supervisor"


@pytest.mark.parametrize("stop", ["stdin", "sigterm"])
def test_stopping_kills_children_that_ignore_sigterm_once_the_leader_is_gone(stop, spawned):
    supervisor, child = _start("wait", spawned)
    if stop == "stdin":
        supervisor.stdin.close()  # what LocalEngine.stop does
    else:
        supervisor.terminate()
    # The leader exits on SIGTERM; its child, which ignores SIGTERM, must get SIGKILL.
    assert supervisor.wait(timeout=60) == 0
    assert _gone(child), "a child that ignores SIGTERM outlived the supervisor"


_BINDER = """
import signal, socket, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
with socket.socket() as sock:
    sock.bind(("127.0.0.1", port))  # the port the supervisor chose is free
    print("bound", port, file=sys.stderr, flush=True)
    signal.pause()  # until the supervisor's SIGTERM
"""


def test_the_supervisor_picks_its_free_port_where_speedbench_is_not_importable():
    """Under .venv-vllm's Python speedbench cannot be imported: the supervisor loads the one free-port
    rule (speedbench/engine/lifecycle.py) by its path. ``-I -S`` gives a Python without site-packages."""
    isolated = [sys.executable, "-I", "-S"]
    assert subprocess.run([*isolated, "-c", "import speedbench"], capture_output=True).returncode != 0
    supervisor = subprocess.Popen([*isolated, str(SUPERVISOR)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
    request = {"python_args": ["-c", _BINDER], "argv": [], "env": {}, "host": "127.0.0.1", "port": 0}
    supervisor.stdin.write((json.dumps(request) + "\n").encode())
    supervisor.stdin.flush()
    announced = json.loads(supervisor.stdout.readline())
    port = int(announced["url"].rsplit(":", 1)[1])
    assert announced["url"] == f"http://127.0.0.1:{port}" and port > 0
    assert supervisor.stderr.readline().decode().split() == ["bound", str(port)]
    supervisor.stdin.close()
    assert supervisor.wait(timeout=60) == 0
    supervisor.stdout.close()
    supervisor.stderr.close()
