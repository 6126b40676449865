"""The local engine starts a real llama.cpp server (xllamacpp), serves, and leaves no process behind."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest

from speedbench.engine import EngineConfig, EngineStartError, LocalEngine

PROMPT = [1, 400, 300]  # BOS + two ids of the 512-token vocabulary


def _post(url: str, payload: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _spec_counters(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    counters = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:spec_decode"):
            name, value = line.rsplit(" ", 1)
            counters[name] = float(value)
    return counters


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True  # reaped: not even a zombie is left
    return False


@pytest.fixture(autouse=True)
def _models(models_dir, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))


def test_draft_speculation_serves_and_stops(models_dir):
    config = EngineConfig(speculation="draft", draft_length=4, n_parallel=2)
    with LocalEngine(config) as engine:
        pid = engine.pid
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", engine.url)
        assert not _process_gone(pid)
        health = json.loads(urllib.request.urlopen(f"{engine.url}/health", timeout=10).read())
        assert health == {"status": "ok"}
        body = _post(f"{engine.url}/v1/completions", {"prompt": PROMPT, "max_tokens": 40, "temperature": 0})
        assert body["usage"]["completion_tokens"] == 40
        timings = body["timings"]
        assert timings["draft_n"] > 0 and 0 <= timings["draft_n_accepted"] <= timings["draft_n"]
        counters = _spec_counters(engine.url)
        assert counters["llamacpp:spec_decode_num_draft_tokens_total"] == timings["draft_n"]
        described = engine.describe()
        assert described["models"]["draft"]["path"].endswith("stories260K-ctx16k-draft-q4_0.gguf")
        assert described["models"]["target"]["sha256"] == (
            "e4a68364ad970c62f8e87f8ce4d7f94b3cfc768d0ef26ba07f85d25038a12fee")  # from the models README
    assert engine.process is None
    assert _process_gone(pid)


def test_no_speculation_is_plain_decoding():
    with LocalEngine(EngineConfig(speculation="none")) as engine:
        body = _post(f"{engine.url}/v1/completions", {"prompt": PROMPT, "max_tokens": 20, "temperature": 0})
        assert body["usage"]["completion_tokens"] == 20
        assert "draft_n" not in body["timings"]
        assert engine.describe()["draft_length"] == 0


def test_synthetic_rates_set_per_position_acceptance():
    # Unconditional rates (1, 1, 0, 0): every step accepts exactly the first two draft tokens,
    # so positions 0 and 1 are accepted once per step and positions 2 and 3 never.
    config = EngineConfig(speculation="synthetic", draft_length=4, synthetic_rates=[1.0, 1.0, 0.0, 0.0])
    with LocalEngine(config) as engine:
        _post(f"{engine.url}/v1/completions", {"prompt": PROMPT, "max_tokens": 50, "temperature": 0})
        counters = _spec_counters(engine.url)
    steps = counters["llamacpp:spec_decode_num_drafts_total"]
    per_pos = [counters[f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}'] for i in range(4)]
    assert steps > 0
    assert per_pos == [steps, steps, 0.0, 0.0]
    assert counters["llamacpp:spec_decode_num_accepted_tokens_total"] == 2 * steps


def test_bad_model_raises_with_log_and_leaves_nothing(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_text("not a gguf")
    engine = LocalEngine(EngineConfig(speculation="none", target=str(broken)))
    with pytest.raises(EngineStartError, match="server log tail"):
        engine.start()
    assert engine.process is None


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(ValueError, match="speculation"):
        EngineConfig(speculation="eagle")
    with pytest.raises(ValueError, match="synthetic_rates"):
        EngineConfig(speculation="synthetic", synthetic_rates=[0.5, 0.9, 0.1, 0.0])
    with pytest.raises(ValueError, match="loopback"):
        EngineConfig(host="0.0.0.0")
    with pytest.raises(ValueError, match="synthetic_length"):
        EngineConfig(speculation="synthetic", draft_length=4, synthetic_length=5.5)
    with pytest.raises(FileNotFoundError, match="target"):
        LocalEngine(EngineConfig(target=str(tmp_path / "missing.gguf"))).start()
    from speedbench.cli import main

    assert main(["serve", "--target", str(tmp_path / "missing.gguf")]) == 2


def test_speedbench_serve_stops_on_ctrl_c(models_dir):
    command = [sys.executable, "-m", "speedbench", "serve", "--speculation", "ngram", "--parallel", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        lines = []
        for line in process.stdout:  # blocks until the server is ready and the URL printed
            lines.append(line)
            if line.startswith("http://"):
                break
        url = lines[-1].strip()
        server_pid = int(re.search(r"server pid: (\d+)", "".join(lines)).group(1))
        assert json.loads(urllib.request.urlopen(f"{url}/health", timeout=10).read()) == {"status": "ok"}
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert "stopping" in process.stdout.read()
        assert _process_gone(server_pid)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_server_exits_when_its_parent_is_killed(models_dir, tmp_path):
    """SIGKILL leaves no chance to clean up: the server must notice stdin closing and exit."""
    import select

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, threading\n"
        "from speedbench.engine import EngineConfig, LocalEngine\n"
        "engine = LocalEngine(EngineConfig(speculation='none', n_parallel=1)).start()\n"
        "print(engine.pid, engine.url, flush=True)\n"
        "threading.Event().wait()\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        server_pid, url = parent.stdout.readline().split()
        server_pid = int(server_pid)
        pidfd = os.pidfd_open(server_pid)
        assert json.loads(urllib.request.urlopen(f"{url}/health", timeout=10).read()) == {"status": "ok"}
        parent.kill()
        parent.wait(timeout=30)
        ready, _, _ = select.select([pidfd], [], [], 30)  # readable once the process has exited
        os.close(pidfd)
        assert ready, "server still running 30 s after its parent was killed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
