"""Install SGLang (PyPI ``sglang``) for CPUs into a venv of its own, with the known quirks handled.

Run with any Python 3.11 (standard library only; ``make sglang`` calls it)::

    python3 speedbench/engine/sglang_install.py .venv-sglang

Why a script and not one ``pip install sglang``:

- The ``sglang`` wheel asks for a GPU stack (flashinfer, CUDA Python, DeepEP, DeepGEMM, FlashMLA,
  cutlass DSL, tilelang, ``sglang-kernel``...) that does not install or run on a CPU-only machine.
  It is installed with ``--no-deps``, then its requirements minus the CUDA-only ones
  (``EXCLUDED``) and minus the audio/video packages a text server never loads (torchaudio
  pins another torch).
- torch and torchvision are installed first, as ``torch==2.14.1 torchvision==0.29.1`` (the torch
  SGLang pins, and the torchvision built against it: SGLang imports torchvision at start, and
  a torchvision built for another torch fails with ``operator torchvision::nms does not exist``).
  pip takes both from this machine's local wheel indexes; elsewhere ``make`` passes
  ``$SPEEDBENCH_TORCH_INDEX`` as ``--torch-index``, an extra index for that step.
- SGLang imports ``sgl_kernel`` unconditionally and no CPU build of it is published. Its place is
  taken at serve time by our plain-torch stand-in (``speedbench/engine/sglang_kernel_standin``,
  put on ``PYTHONPATH`` by ``speedbench.engine.sglang``); nothing of it is installed here.
- The stamp file ``<venv>/.installed`` is written last, so an interrupted install starts over;
  it records what was installed, so a change of version or of the exclusions reinstalls.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


SGLANG_VERSION = "0.5.23"
TORCH_VERSION = "2.14.1"
TORCHVISION_VERSION = "0.29.1"
# Never installed: GPU-only kernels and runtimes, and media packages (see the docstring).
EXCLUDED = (
    "cuda-python", "flash-attn-4", "flashinfer-python", "humming-kernels",
    "kernels", "nvidia-cutlass-dsl", "nvidia-mathdx", "nvshmem4py-cu13", "quack-kernels",
    "sgl-deep-ep", "sgl-deep-gemm", "sgl-flash-mla", "sglang-kernel", "tilelang",
    "torch-memory-saver", "torchaudio", "torchcodec", "av", "decord2",
)
STAMP = ".installed"


def _run(*cmd: str) -> str:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE)
    return done.stdout


# Runs inside the new venv: the requirement strings of sglang that apply to this machine,
# without torch/torchvision (installed first) and the excluded packages.
_LIST_REQUIREMENTS = r"""
import sys
from importlib import metadata
from packaging.requirements import Requirement
skip = set(sys.argv[1].split(","))
for line in metadata.requires("sglang") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    name = req.name.lower().replace("_", "-")
    if name in ("torch", "torchvision") or name in skip:
        continue
    print(str(req).split(";")[0].strip())
"""


def stamp_text() -> str:
    return (f"sglang=={SGLANG_VERSION} torch=={TORCH_VERSION} torchvision=={TORCHVISION_VERSION} "
            f"without {','.join(EXCLUDED)}\n")


def install(venv: Path, python: str = sys.executable, torch_index: str | None = None) -> None:
    stamp = venv / STAMP
    wanted = stamp_text()
    if stamp.exists() and stamp.read_text() == wanted:
        stamp.touch()  # newer than this script again, so make is satisfied
        print(f"{venv}: already installed ({stamp})")
        return
    if not (venv / "bin" / "python").exists():
        _run(python, "-m", "venv", str(venv))
    py = str(venv / "bin" / "python")
    pip = (py, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    _run(*pip, "--upgrade", "pip", "packaging")
    torch = (f"torch=={TORCH_VERSION}", f"torchvision=={TORCHVISION_VERSION}")
    _run(*pip, *(["--extra-index-url", torch_index] if torch_index else []), *torch)
    _run(*pip, "--no-deps", f"sglang=={SGLANG_VERSION}")
    requirements = _run(py, "-c", _LIST_REQUIREMENTS, ",".join(EXCLUDED)).split("\n")
    # The torch pins are repeated so that no dependency can swap them for other builds.
    _run(*pip, *torch, *[r for r in requirements if r.strip()])
    present = [name for name in EXCLUDED
               if subprocess.run([py, "-m", "pip", "show", "-q", name], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0]
    if present:
        _run(py, "-m", "pip", "uninstall", "-y", "-q", *present)
    # The check that matters: SGLang's server module imports with our kernel stand-in in place.
    standin = Path(__file__).resolve().with_name("sglang_kernel_standin")
    env = {**os.environ, "PYTHONPATH": str(standin), "SGLANG_USE_CPU_ENGINE": "1"}
    print(f"+ {py} -c 'import sglang.srt.entrypoints.http_server' (PYTHONPATH={standin})", flush=True)
    subprocess.run([py, "-c", "import sglang, sglang.srt.entrypoints.http_server; "
                              "print('sglang', sglang.__version__)"], check=True, env=env)
    stamp.write_text(wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default=".venv-sglang", help="venv folder (default .venv-sglang)")
    # Make passes $SPEEDBENCH_TORCH_INDEX here: this script runs under any python3, before
    # speedbench is importable, so it reads no settings of its own.
    parser.add_argument("--torch-index", default="", help="extra package index for torch (empty: none)")
    args = parser.parse_args(argv)
    install(Path(args.venv).resolve(), torch_index=args.torch_index or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
