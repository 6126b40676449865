"""`speedbench assets fetch` against a local stand-in of the origins, and `make demo` from a clone
without ../shared.

Serves ../shared by the lock's URL paths on 127.0.0.1 (tests/standins/asset_origin.py), then
fetches the demo subset and the whole lock into fresh temporary folders (4 workers, as the
command's default) and prints files, MB, seconds and MB/s of each. With --demo it also clones
this repository (git clone, committed state) into a temporary folder with no shared/ beside it
and times `make demo` there with an empty cache and SPEEDBENCH_ASSETS_MIRROR_URL at the stand-in
(`-o install VENV=<this checkout's .venv>`: the clone's .venv is not built, so the time is the
assets, the build of SPEED-Lite and the sweep).

    .venv/bin/python bench/assets_fetch.py [--demo] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from speedbench import settings  # noqa: E402
from speedbench.assets.fetch import fetch  # noqa: E402
from speedbench.assets.lock import load_lock, select  # noqa: E402
from tests.standins.asset_origin import AssetOrigin  # noqa: E402


def fetch_once(entries, origin, folder: Path, label: str) -> None:
    report = fetch(entries, folder, mirror=origin.url, progress=False)
    mb = report.downloaded_bytes / 1e6
    print(f"{label}: {len(report.fetched)} files, {mb:.1f} MB, {report.seconds:.2f} s, "
          f"{mb / report.seconds:.1f} MB/s (fetched and verified; sha256 of each file)", flush=True)


def demo_in_clone(origin, work: Path) -> None:
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEEDBENCH_") and k not in ("MAKEFLAGS", "MFLAGS")}
    env.update(SPEEDBENCH_CACHE=str(work / "cache"), SPEEDBENCH_ASSETS_MIRROR_URL=origin.url)
    print(f"make demo in {clone} (no {work / 'shared'}), cache {work / 'cache'}", flush=True)
    started = time.perf_counter()
    done = subprocess.run(["make", "-C", str(clone), "-o", "install", "demo", f"VENV={REPO / '.venv'}",
                           "DEMO_ARGS=--no-progress"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    lines = [line for line in done.stderr.splitlines() if line.startswith("assets:") and "%|" not in line]
    print("\n".join(lines))
    print("\n".join(done.stdout.splitlines()[-6:]))
    print(f"make demo from a clone without ../shared: exit {done.returncode}, {wall:.1f} s wall", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="also time `make demo` in a clone without ../shared")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    shared = settings.shared_dir()
    entries = load_lock()
    with tempfile.TemporaryDirectory() as tmp, AssetOrigin(shared, entries) as origin:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        fetch_once(select(entries, "demo"), origin, work / "demo", "--only demo")
        fetch_once(entries, origin, work / "all", "--only all")
        if args.demo:
            demo_in_clone(origin, work)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
