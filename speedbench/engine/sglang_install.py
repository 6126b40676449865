"""Install SGLang (PyPI ``sglang``) for CPUs into a venv of its own, with the known quirks handled.

Run with any Python 3.11 (standard library and ``venv_install.py`` beside it only; ``make sglang``
calls it)::

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

import os
import subprocess
import sys
from pathlib import Path

if __package__:  # imported as speedbench.engine.sglang_install (tests)
    from . import venv_install
else:  # run as a file by `make sglang`: this folder is sys.path[0], speedbench is not importable
    import venv_install


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


def stamp_text() -> str:
    return (f"sglang=={SGLANG_VERSION} torch=={TORCH_VERSION} torchvision=={TORCHVISION_VERSION} "
            f"without {','.join(EXCLUDED)}\n")


def _check(py: str) -> None:
    """The check that matters: SGLang's server module imports with our kernel stand-in in place."""
    standin = Path(__file__).resolve().with_name("sglang_kernel_standin")
    env = {**os.environ, "PYTHONPATH": str(standin), "SGLANG_USE_CPU_ENGINE": "1"}
    print(f"+ {py} -c 'import sglang.srt.entrypoints.http_server' (PYTHONPATH={standin})", flush=True)
    subprocess.run([py, "-c", "import sglang, sglang.srt.entrypoints.http_server; "
                              "print('sglang', sglang.__version__)"], check=True, env=env)


def install(venv: Path, python: str = sys.executable, torch_index: str | None = None) -> None:
    venv_install.install(
        venv, stamp_text(), dist="sglang", version=SGLANG_VERSION,
        torch=(f"torch=={TORCH_VERSION}", f"torchvision=={TORCHVISION_VERSION}"),
        excluded=EXCLUDED, check=_check, python=python, torch_index=torch_index)


def main(argv: list[str] | None = None) -> int:
    return venv_install.main(argv, doc=__doc__, default_venv=".venv-sglang", install=install)


if __name__ == "__main__":
    sys.exit(main())
