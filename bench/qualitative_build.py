"""Full Qualitative build from the offline mirror: wall time and peak memory, cold and warm.

Runs ``speedbench build --configs qualitative`` twice in fresh subprocesses on the same sources:
cold (an empty embedding cache) and warm (the cache the cold run filled), each writing its own
dataset folder, and prints wall time, peak resident memory (the child's ru_maxrss) and whether the
two parquet files are byte-identical.

    .venv/bin/python bench/qualitative_build.py [--sources DIR] [--pool-cap N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import resource, sys
from speedbench.cli import main
code = main(sys.argv[1:])
print("PEAK_RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def run_build(sources: Path, out: Path, cache: Path, pool_cap: int | None) -> tuple[float, int, str]:
    command = [sys.executable, "-c", CHILD, "build", "--configs", "qualitative", "--sources", str(sources),
               "--out", str(out), "--embedding-cache", str(cache), "--no-progress"]
    if pool_cap is not None:
        command += ["--pool-cap", str(pool_cap)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak = int(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK_RSS_KB")))
    return wall, peak, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path,
                        default=Path(os.environ.get("SPEEDBENCH_SOURCES", Path(__file__).resolve().parents[2] / "shared" / "sources")))
    parser.add_argument("--pool-cap", type=int, default=None, help="default: the CLI default")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="speedbench-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "embedding-cache"
    print(f"sources: {args.sources}; work folder: {work}; cpus={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    results = {}
    for phase in ("cold", "warm"):
        wall, peak, stdout = run_build(args.sources, work / phase / "speed-bench", cache, args.pool_cap)
        manifest = json.loads((work / phase / "speed-bench" / "manifest.json").read_text())["configs"]["qualitative"]
        parquet = (work / phase / "speed-bench" / manifest["data_file"]).read_bytes()
        results[phase] = (wall, peak, hashlib.sha256(parquet).hexdigest(), manifest)
        print(f"{phase:>4}: wall {wall:7.1f} s, peak RSS {peak / 1024:7.0f} MiB, texts embedded "
              f"{manifest['stats']['texts_embedded_this_build']:>6}, rows {manifest['rows']}, "
              f"parquet sha256 {results[phase][2][:16]}")
    same = results["cold"][2] == results["warm"][2]
    print(f"cold/warm wall ratio: {results['cold'][0] / results['warm'][0]:.1f}x; parquet byte-identical: {same}")
    stats = results["warm"][3]["stats"]
    pools = {c: s["pool"] for c, s in stats["categories"].items()}
    print(f"pool cap {stats['pool_cap']}; pools after de-duplication: {pools}")
    removed = {c: s["near_duplicates_removed"] for c, s in stats["categories"].items() if s["near_duplicates_removed"]}
    print(f"near-duplicates removed by FAISS (cosine >= {stats['dedup_threshold']}): {removed}")
    if "## Diversity report" in stdout:
        print("## Diversity report" + stdout.split("## Diversity report", 1)[1])


if __name__ == "__main__":
    main()
