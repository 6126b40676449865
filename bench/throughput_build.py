"""Full Throughput build: all five buckets (3 tiers x --per-tier) + the five random_* configs.

Prints wall time per config and in total, and the peak RSS of the process (target: under 10
minutes and under 4 GB on the 2-core machine). Writes the dataset into a temporary folder (or
--out). Usage: .venv/bin/python bench/throughput_build.py [--per-tier 512] [--configs ...]
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALL = ["throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k", "throughput_32k",
       "random_1k", "random_2k", "random_8k", "random_16k", "random_32k"]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-tier", type=int, default=512)
    parser.add_argument("--configs", default=",".join(ALL))
    parser.add_argument("--sources", type=Path,
                        default=Path(os.environ.get("SPEEDBENCH_SOURCES", REPO.parent / "shared" / "sources")))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import speedbench.dataset_builder.throughput  # noqa: F401  (registers the configs)
    from speedbench.dataset_builder.registry import CONFIG_BUILDERS, BuildContext
    from speedbench.dataset_builder.writer import write_dataset

    out = args.out or Path(tempfile.mkdtemp(prefix="speedbench-throughput-"))
    options = {"per_tier": args.per_tier, "allow_short": False}
    ctx = BuildContext(sources=args.sources, out_dir=out, seed=args.seed, options=options, progress=False)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs visible (shared with other work: "
          f"timings may be contended), python {platform.python_version()}")
    print(f"per tier: {args.per_tier}; output: {out}")
    start = time.perf_counter()
    total_rows = total_tokens = 0
    for name in [c.strip() for c in args.configs.split(",") if c.strip()]:
        t0 = time.perf_counter()
        built = CONFIG_BUILDERS[name](ctx)
        t_build = time.perf_counter() - t0
        write_dataset(out, [built], {"seed": args.seed, "options": options, "sources": str(args.sources),
                                     "config": name})
        n_tokens = built.stats["n_tokens"]
        total_rows += len(built.rows)
        total_tokens += len(built.rows) * n_tokens
        print(f"{name:>15}: {len(built.rows):5d} rows x {n_tokens:>6,} tokens  build {t_build:7.1f} s  "
              f"write {time.perf_counter() - t0 - t_build:5.1f} s  peak RSS so far {peak_rss_mib():7.0f} MiB",
              flush=True)
    wall = time.perf_counter() - start
    print(f"TOTAL: {total_rows} rows, {total_tokens:,} prompt tokens, wall {wall:.1f} s ({wall / 60:.2f} min), "
          f"{total_tokens / wall:,.0f} prompt tokens/s, peak RSS {peak_rss_mib():.0f} MiB "
          f"(targets: < 10 min, < 4096 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
