"""`speedbench curate` end to end on real prompts from the mirror, cold and warm embedding cache.

Takes N prompts from the mirror's Qualitative candidate pools (every adapter; a seeded sample
balanced over categories), writes them as JSONL (``id``, ``turns``, ``category``), then runs
``speedbench curate`` twice in subprocesses with a fresh embedding cache: cold (everything
embedded) and warm (nothing embedded). Prints wall time, texts embedded per second (cold), peak
RSS and whether both runs wrote identical parquet bytes.

    .venv/bin/python bench/selection_curate_e2e.py [--n 5000] [--per-group 80] [--sources ../shared/sources]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_prompts(sources: Path, n: int, path: Path, seed: int = 0) -> dict[str, int]:
    import numpy as np

    from speedbench.dataset_builder.qualitative.pools import collect_candidates
    from speedbench.dataset_builder.sources import SourceFiles

    candidates = collect_candidates(SourceFiles(sources))
    everything = [row for category in sorted(candidates) for row in candidates[category]]
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(everything), size=min(n, len(everything)), replace=False))
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as handle:
        for i in chosen:
            row = everything[i]
            counts[row.category] = counts.get(row.category, 0) + 1
            handle.write(json.dumps({"id": row.question_id, "turns": row.turns, "category": row.category},
                                    ensure_ascii=False) + "\n")
    return counts


def curate(prompts: Path, out: Path, cache: Path, per_group: int) -> dict:
    command = [sys.executable, "-m", "speedbench", "curate", str(prompts), "--text-field", "turns",
               "--group-by", "category", "--id-field", "id", "--per-group", str(per_group), "--config", "mine",
               "--out", str(out), "--embedding-cache", str(cache), "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"curate failed:\n{done.stderr[-3000:]}")
    embedded = next(int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("embedded "))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "embedded": embedded, "peak_rss_mib": peak,
            "parquet": (out / "data" / "mine" / "test-00000-of-00001.parquet").read_bytes()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--per-group", type=int, default=80)
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get("SPEEDBENCH_SOURCES", "../shared/sources")))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        counts = write_prompts(args.sources, args.n, root / "prompts.jsonl")
        print(f"{sum(counts.values())} prompts in {len(counts)} groups: {counts}")
        cold = curate(root / "prompts.jsonl", root / "cold", root / "cache", args.per_group)
        warm = curate(root / "prompts.jsonl", root / "warm", root / "cache", args.per_group)
    print(f"{'run':<5} {'wall s':>8} {'embedded':>9} {'texts/s':>8} {'peak RSS MiB (max so far)':>26}")
    for name, r in (("cold", cold), ("warm", warm)):
        rate = f"{r['embedded'] / r['seconds']:.1f}" if r["embedded"] else "-"
        print(f"{name:<5} {r['seconds']:>8.1f} {r['embedded']:>9} {rate:>8} {r['peak_rss_mib']:>26,.0f}")
    print(f"identical parquet bytes cold vs warm: {cold['parquet'] == warm['parquet']}")
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
