"""The sweep's server supervisor on small real processes: health, provenance, stop and gone, failures."""
from __future__ import annotations

import shlex
import sys

import psutil
import pytest

from speedbench.sweep.plan import Variant
from speedbench.sweep.server import ServerProcess, ServerStartError, stop_tree

# An HTTP server on the given port that also starts a grandchild in a session of its own (as
# vLLM's supervisor does), which a process-group signal alone would miss.
SERVER = """
import http.server, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def _variant(command: str, health: str = "/", startup_timeout_s: float = 60.0) -> Variant:
    return Variant(name="v", engine="openai", method="none", k=0, baseline=None, command=command, url=None,
                   port=None, host="127.0.0.1", health=health, startup_timeout_s=startup_timeout_s,
                   stop_timeout_s=10.0, env={}, cwd=None, gpus=1, drafter=None, run={}, source_index=0)


def _command(script: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{port}}"


def test_start_health_stop_and_the_whole_tree_is_gone(tmp_path):
    server = ServerProcess(_variant(_command(SERVER)), tmp_path / "server.log")
    spawned = []
    server.start(on_spawn=lambda s: spawned.append(s.pid))
    assert spawned == [server.pid] and server.alive()
    assert server.url == f"http://127.0.0.1:{server.port}" and server.argv[-1] == str(server.port)
    tree = [server.pid] + [c.pid for c in psutil.Process(server.pid).children(recursive=True)]
    assert len(tree) == 2  # the server and its grandchild in another session
    outcome = server.stop()
    assert outcome["gone"] and outcome["port_free"] and outcome["survivors"] == []
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in tree)
    assert "listening" in (tmp_path / "server.log").read_text()


def test_a_server_that_exits_at_start_is_reported_with_its_log_tail(tmp_path):
    script = "import sys; print('error: model file /m/x.gguf not found', flush=True); sys.exit(3)"
    server = ServerProcess(_variant(_command(script)), tmp_path / "server.log")
    with pytest.raises(ServerStartError) as error:
        server.start()
    message = str(error.value)
    assert "exited with status 3" in message and "error: model file /m/x.gguf not found" in message
    assert server.last_stop["gone"]


def test_a_server_that_never_becomes_healthy_times_out_and_is_stopped(tmp_path):
    server = ServerProcess(_variant(_command(SERVER), health="/no-such-health", startup_timeout_s=3.0),
                           tmp_path / "server.log")
    with pytest.raises(ServerStartError, match="did not answer 200 within 3 s"):
        server.start()
    assert server.last_stop["gone"] and not server.alive()


def test_stop_tree_spares_a_reused_pid():
    """A recorded pid whose start time differs is another process now: neither it nor its group is touched."""
    import subprocess

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        started = psutil.Process(other.pid).create_time()
        outcome = stop_tree(other.pid, started - 1000, 1.0)
        assert outcome["processes"] == 0 and other.poll() is None
        assert stop_tree(other.pid, started, 5.0)["gone"]
    finally:
        other.kill()
        other.wait()
