"""`make sglang` / `make vllm` run the installers as files under any python3, before `.venv`
exists: they must import nothing but the standard library (speedbench is not importable there),
and Make hands them ``$SPEEDBENCH_TORCH_INDEX`` as ``--torch-index``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", ["sglang_install.py", "vllm_install.py"])
def test_the_installers_need_only_the_standard_library(script):
    # -S: no site-packages, so neither speedbench (installed editable) nor anything else is there.
    done = subprocess.run([sys.executable, "-S", str(REPO / "speedbench" / "engine" / script), "--help"],
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "--torch-index" in done.stdout


@pytest.mark.parametrize("target,script", [("sglang", "sglang_install.py"), ("vllm", "vllm_install.py")])
def test_make_passes_the_torch_index(target, script):
    done = subprocess.run(["make", "-n", "-B", target, "SPEEDBENCH_TORCH_INDEX=https://example.org/whl/cpu",
                           "PYTHON=python3"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f'speedbench/engine/{script} .venv-{target} --torch-index "https://example.org/whl/cpu"' in done.stdout
