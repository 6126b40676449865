"""Full Qualitative build from the offline mirror: wall time, texts/s and peak memory, cold and warm.

Runs ``speedbench build --configs qualitative`` twice in fresh subprocesses on the same sources:
cold (an empty embedding cache in the work folder, so nothing is reused from ~/.cache) and warm
(the cache the cold run filled), each writing its own dataset folder, and prints wall time, the
load average before and after, texts embedded per second, peak resident memory (the child's and
its embedding workers' ru_maxrss), whether the two parquet files are byte-identical, and the
per-category table: pool, languages, task types, hard share, median first-turn ISL (o200k), and
the mean pairwise similarity of the selection against random and Spec-Bench.

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
print("PEAK_CHILD_RSS_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def _children_cpu() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)   # waited-for children and their descendants
    return usage.ru_utime + usage.ru_stime


def run_build(sources: Path, out: Path, cache: Path, pool_cap: int | None) -> tuple[float, float, int, int, str]:
    command = [sys.executable, "-c", CHILD, "build", "--configs", "qualitative", "--sources", str(sources),
               "--out", str(out), "--embedding-cache", str(cache), "--no-progress"]
    if pool_cap is not None:
        command += ["--pool-cap", str(pool_cap)]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak = int(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK_RSS_KB")))
    child = int(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK_CHILD_RSS_KB")))
    return wall, cpu, peak, child, done.stdout


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def category_table(stats: dict) -> str:
    lines = ["| category | pool | languages | task types | hard share | median ISL (o200k) | "
             "similarity: ours / random / Spec-Bench |", "|---|---:|---:|---|---:|---:|---|"]
    for category, s in stats["categories"].items():
        sim = s["mean_similarity"]
        spec = f"{sim['specbench']:.3f}" if sim["specbench"] is not None else "-"
        tasks = ", ".join(f"{t} {n}" for t, n in s["task_types"].items()) if len(s["task_types"]) <= 6 else \
            f"{len(s['task_types'])} sub-categories"
        hard = f"{s['hard_share']:.0%}" if "hard" in s["difficulty"] or category in HARD_CATEGORIES else "-"
        lines.append(f"| {category} | {s['pool']} | {len(s['languages'])} | {tasks} | {hard} | "
                     f"{s['median_first_turn_isl_o200k']:.0f} | {sim['selected']:.3f} / {sim['random']:.3f} / {spec} |")
    return "\n".join(lines)


HARD_CATEGORIES = ("coding", "humanities", "math", "stem")


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
    print(f"sources: {args.sources}; work folder: {work}; cpus={os.cpu_count()}")
    results = {}
    for phase in ("cold", "warm"):
        before = _load()
        wall, cpu, peak, child, stdout = run_build(args.sources, work / phase / "speed-bench", cache, args.pool_cap)
        manifest = json.loads((work / phase / "speed-bench" / "manifest.json").read_text())["configs"]["qualitative"]
        parquet = (work / phase / "speed-bench" / manifest["data_file"]).read_bytes()
        results[phase] = (wall, peak, hashlib.sha256(parquet).hexdigest(), manifest)
        embedded = manifest["stats"]["texts_embedded_this_build"]
        print(f"{phase:>4}: wall {wall:7.1f} s, CPU {cpu:7.1f} s (build and embedding workers; "
              f"{cpu / (os.cpu_count() or 1):.0f} s on {os.cpu_count()} idle cores), texts embedded {embedded:>6} ({embedded / wall:6.1f} texts/s over "
              f"the whole build), peak RSS {peak / 1024:5.0f} MiB (largest embedding worker {child / 1024:5.0f} MiB), "
              f"rows {manifest['rows']}, parquet sha256 {results[phase][2][:16]}; load average before {before}, "
              f"after {_load()}")
    same = results["cold"][2] == results["warm"][2]
    print(f"cold/warm wall ratio: {results['cold'][0] / results['warm'][0]:.1f}x; parquet byte-identical: {same}")
    stats = results["warm"][3]["stats"]
    pools = {c: s["pool"] for c, s in stats["categories"].items()}
    print(f"pool cap {stats['pool_cap']}; pools after de-duplication: {pools}")
    removed = {c: s["near_duplicates_removed"] for c, s in stats["categories"].items() if s["near_duplicates_removed"]}
    print(f"near-duplicates removed by FAISS (cosine >= {stats['dedup_threshold']}): {removed}")
    variants = {c: s.get("template_variants_removed", 0) for c, s in stats["categories"].items()}
    print(f"template variants removed (another prompt plus a short template): {variants}")
    multi = {c: f"{s['multiturn']} ({s['multiturn'] / max(1, s['selected']):.3f})" for c, s in stats["categories"].items()}
    print(f"multi-turn rows: {stats['multiturn_rows']} of {results['warm'][3]['rows']} "
          f"(share {stats['multiturn_rows'] / max(1, results['warm'][3]['rows']):.3f}; paper: about 20%); per category {multi}")
    print(f"median first-turn ISL (o200k) over all rows: {stats['median_first_turn_isl_o200k']:.0f} (paper, Table 3: 141)")
    print(category_table(stats))
    if "## Diversity report" in stdout:
        print("## Diversity report" + stdout.split("## Diversity report", 1)[1])


if __name__ == "__main__":
    main()
