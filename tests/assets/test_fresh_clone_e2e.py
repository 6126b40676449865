"""`make demo` in a clone with no ../shared beside it: its assets come from the cache, else are
fetched (here from a local stand-in of the origins), and the served model files are made."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from speedbench.assets.lock import load_lock, select
from speedbench.engine.gguf_export import VARIANTS
from tests.conftest import REPO_ROOT
from tests.standins.asset_origin import AssetOrigin


def _make_demo(clone: Path, env: dict) -> subprocess.CompletedProcess:
    # -o install: the .venv of this checkout is used as it is (the clone's would be built from scratch);
    # DEMO_ARGS=--help: the demo itself (20 minutes) is tested in tests/demo, this test stops after the assets
    return subprocess.run(["make", "-s", "-C", str(clone), "-o", "install", "demo", f"VENV={REPO_ROOT / '.venv'}",
                           "DEMO_ARGS=--help"], env=env, capture_output=True, text=True, timeout=1200)


def test_make_demo_finds_or_fetches_its_assets_without_shared(sources_dir, tmp_path):
    shared = sources_dir.parent
    clone = tmp_path / "clone"  # a real clone; its ../shared is tmp_path/shared: absent
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO_ROOT), str(clone)], check=True)
    # the working tree's Makefile over the clone's, so an uncommitted edit is what gets tested
    shutil.copy(REPO_ROOT / "Makefile", clone / "Makefile")
    assert not (clone.parent / "shared").exists() and (clone / "examples" / "sweep" / "local.toml").is_file()
    cache = tmp_path / "cache"
    entries = load_lock()
    demo = select(entries, "demo")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPEEDBENCH_SOURCES", "SPEEDBENCH_MODELS", "SPEEDBENCH_SHARED", "MAKEFLAGS", "MFLAGS")}
    with AssetOrigin(shared, entries) as origin:
        env.update(SPEEDBENCH_CACHE=str(cache), SPEEDBENCH_ASSETS_MIRROR_URL=origin.url)
        first = _make_demo(clone, env)
        assert first.returncode == 0, first.stderr[-3000:]
        fetched_requests = len(origin.log)
        second = _make_demo(clone, env)
        assert second.returncode == 0, second.stderr[-3000:]
        assert len(origin.log) == fetched_requests  # the second run downloads nothing
    assert f"no shared folder at {tmp_path / 'shared'}" in first.stderr
    assert f"fetched {len(demo)} file(s)" in first.stderr and "usage: speedbench demo" in first.stdout
    assert f"assets: the cache {cache / 'assets'}" in second.stderr
    assert fetched_requests == len({e.url for e in demo})  # the demo's subset only, once each
    root = cache / "assets"
    got = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    served = {f"models/stories260K/{n}" for n in (*VARIANTS, "tokenizer.json", "tokenizer_config.json")}
    assert got == {e.dest for e in demo} | served
    for entry in demo:
        assert hashlib.sha256((root / entry.dest).read_bytes()).hexdigest() == entry.sha256, entry.dest
    for name in served:  # made from the fetched checkpoint, the same bytes as ../shared's
        assert (root / name).read_bytes() == (shared / name).read_bytes(), name
