"""Selection at scale: Algorithm 1 (k = 80) on clustered synthetic pools of 512-d unit vectors,
numpy reference vs FAISS exact (flat) vs approximate indexes, each configuration in its own
subprocess (so peak RSS is its own: the worker's VmHWM from /proc/self/status).

Printed per configuration: index build, greedy and swap seconds, swaps, peak RSS, the exact
objective f(S) (recomputed in float64 from the stored vectors), and the overlap with the
selection of the exact (flat) path. The pool is written to disk first, shard by shard
(``selection/synthetic.py``): float32 ``.npy`` (memory-mapped by the FAISS paths, loaded by the
numpy path) or raw float16 for pools too large for memory (``--float16``; approximate indexes only).

    .venv/bin/python bench/selection_scale.py --n 100000 --configs numpy,flat,ivf,hnsw,ivfpq,pqfs
    .venv/bin/python bench/selection_scale.py --n 1000000 --configs numpy,flat,pqfs
    .venv/bin/python bench/selection_scale.py --n 10000000 --float16 --configs pqfs --delete
    .venv/bin/python bench/selection_scale.py --n 100000 --configs flat,numpy --profile   # memory per phase
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

D, K = 512, 80


def pool_path(directory: Path, n: int, float16: bool) -> Path:
    return directory / (f"pool_{n}_{D}.f16" if float16 else f"pool_{n}_{D}.npy")


def make_pool(path: Path, n: int, float16: bool) -> float:
    import numpy as np

    from speedbench.dataset_builder.selection.synthetic import clustered_shards

    start = time.perf_counter()
    if float16:
        out = np.memmap(path, dtype=np.float16, mode="w+", shape=(n, D))
    else:
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, D))
    row = 0
    for shard in clustered_shards(n, D, shard_rows=100_000, n_clusters=64, seed=0):
        out[row:row + len(shard)] = shard
        row += len(shard)
    out.flush()
    del out
    return time.perf_counter() - start


def open_pool(path: Path, n: int, in_memory: bool):
    import numpy as np

    if path.suffix == ".f16":
        return np.memmap(path, dtype=np.float16, mode="r", shape=(n, D))
    return np.load(path) if in_memory else np.load(path, mmap_mode="r")


def worker(config: str, path: Path, n: int, threads: int, seed: int) -> dict:
    import numpy as np

    from speedbench.dataset_builder.selection.exact import exact_objective

    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    if config == "numpy":
        from speedbench.dataset_builder.selection.greedy_swap import greedy, swap_refine

        x = open_pool(path, n, in_memory=True)
        loaded = time.perf_counter()
        selection = greedy(x, K, rng)
        greedy_done = time.perf_counter()
        swap_refine(x, selection)
        result = {"build_s": loaded - started, "greedy_s": greedy_done - loaded,
                  "swap_s": time.perf_counter() - greedy_done, "swaps": selection.swaps}
        indices, store = selection.indices, x
    else:
        from speedbench.dataset_builder.selection.faiss_index import build_index
        from speedbench.dataset_builder.selection.faiss_select import faiss_greedy_swap

        store = open_pool(path, n, in_memory=False)
        index = build_index(store, config, threads=threads, seed=seed)
        built = time.perf_counter()
        selection = faiss_greedy_swap(index, K, rng)
        result = {"build_s": built - started, "greedy_s": selection.greedy_seconds,
                  "swap_s": selection.swap_seconds, "swaps": selection.swaps, "index": index.params}
        indices = selection.indices
    result.update(config=config, n=n, total_s=time.perf_counter() - started,
                  objective=exact_objective(store, indices), indices=[int(i) for i in indices],
                  # VmHWM, not ru_maxrss: on Linux a child's ru_maxrss starts from its parent's RSS at
                  # fork (kept across exec), so a worker started right after make_pool wrote the pool
                  # reported the parent's ~430 MiB at N = 100k instead of its own ~256.
                  peak_rss_mib=memory_status()["VmHWM"])
    return result


def memory_status() -> dict[str, int]:
    """MiB now: VmRSS = RssAnon (heap, numpy buffers, FAISS/OpenMP allocations) + RssFile (mapped
    files: libraries and the memory-mapped pool's resident pages); VmHWM = peak RSS so far."""
    values = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                values[key] = int(value.split()[0]) // 1024
    return values


def profile(config: str, path: Path, n: int, threads: int, seed: int) -> list[dict]:
    """Memory per phase of one selection: /proc RSS split (anonymous vs file-backed) after each
    phase, and tracemalloc's peak of Python/numpy allocations within it (FAISS's C++ and OpenMP
    buffers are not traced: they show as RssAnon growth beyond the traced peak)."""
    import tracemalloc

    import numpy as np

    phases = [{"phase": "imports (numpy)", **memory_status(), "traced_peak_mib": 0.0}]
    tracemalloc.start()

    def mark(name: str) -> None:
        phases.append({"phase": name, **memory_status(),
                       "traced_peak_mib": tracemalloc.get_traced_memory()[1] / 2**20})
        tracemalloc.reset_peak()

    from speedbench.dataset_builder.selection.exact import exact_objective

    rng = np.random.default_rng(seed)
    if config == "numpy":
        from speedbench.dataset_builder.selection.greedy_swap import greedy, swap_refine

        mark("imports (selection)")
        x = open_pool(path, n, in_memory=True)
        mark("np.load pool")
        selection = greedy(x, K, rng)
        mark("greedy")
        swap_refine(x, selection)
        mark("swaps")
        exact_objective(x, selection.indices)
        mark("exact objective")
        return phases
    import faiss

    from speedbench.dataset_builder.selection.faiss_index import build_index
    from speedbench.dataset_builder.selection.faiss_select import faiss_greedy, faiss_swap_refine

    mark("imports (faiss, selection)")
    store = open_pool(path, n, in_memory=False)
    mark("open memory map")
    index = build_index(store, config, threads=threads, seed=seed)
    mark(f"build_index({config})")
    selection = faiss_greedy(index, K, rng)
    mark(f"greedy ({selection.searches} searches, widest {selection.widest_query})")
    searches = selection.searches
    faiss_swap_refine(index, selection)
    mark(f"swaps ({selection.swaps} swaps, {selection.searches - searches} searches, widest {selection.widest_query})")
    exact_objective(store, selection.indices)
    mark("exact objective")
    faiss.omp_set_num_threads(1)
    return phases


def print_profile(config: str, phases: list[dict], n: int) -> None:
    print(f"\n{config}: memory per phase (MiB; embeddings {n * D * 4 / 2**20:,.0f} MiB float32)")
    print(f"{'phase':<52} {'VmRSS':>6} {'RssAnon':>8} {'RssFile':>8} {'VmHWM':>6} {'traced peak':>12}")
    for p in phases:
        print(f"{p['phase']:<52} {p['VmRSS']:>6} {p['RssAnon']:>8} {p['RssFile']:>8} {p['VmHWM']:>6} "
              f"{p['traced_peak_mib']:>12.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--configs", default="numpy,flat,pqfs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/speedbench-selection-scale"))
    parser.add_argument("--float16", action="store_true", help="store the pool as float16 (approximate indexes)")
    parser.add_argument("--delete", action="store_true", help="delete the pool file afterwards")
    parser.add_argument("--profile", action="store_true",
                        help="instead of timing: memory per phase of each configuration (RSS split, tracemalloc)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = pool_path(args.dir, args.n, args.float16)
    if args.worker:
        run = profile if args.profile else worker
        print(json.dumps(run(args.worker, path, args.n, args.threads, args.seed)))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        seconds = make_pool(path, args.n, args.float16)
        print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB) in {seconds:.0f} s")
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "OPENBLAS_NUM_THREADS": str(args.threads)}
    rows = []
    for config in args.configs.split(","):
        out = subprocess.run([sys.executable, __file__, "--worker", config, "--n", str(args.n), "--dir", str(args.dir),
                              "--threads", str(args.threads), "--seed", str(args.seed)]
                             + (["--float16"] if args.float16 else []) + (["--profile"] if args.profile else []),
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{config}: failed\n{out.stderr[-2000:]}")
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"  done {config} (load average {os.getloadavg()[0]:.2f})", flush=True)
        if args.profile:
            print_profile(config, rows.pop(), args.n)
    if args.profile:
        print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        return
    reference = next((r for r in rows if r["config"] == "flat"), None)
    print(f"\nN = {args.n:,}, d = {D}, k = {K}, {args.threads} threads; embeddings "
          f"{args.n * D * (2 if args.float16 else 4) / 2**20:,.0f} MiB ({'float16' if args.float16 else 'float32'})")
    print(f"{'config':<8} {'index':<16} {'build s':>8} {'greedy s':>9} {'swap s':>7} {'swaps':>5} {'total s':>8} "
          f"{'peak RSS MiB':>12} {'objective f(S)':>15} {'overlap':>8}")
    for r in rows:
        overlap = (f"{len(set(r['indices']) & set(reference['indices'])) / K:.3f}" if reference else "-")
        print(f"{r['config']:<8} {r.get('index', {}).get('factory', '-'):<16} {r['build_s']:>8.1f} {r['greedy_s']:>9.1f} "
              f"{r['swap_s']:>7.1f} {r['swaps']:>5} {r['total_s']:>8.1f} {r['peak_rss_mib']:>12,.0f} "
              f"{r['objective']:>15.3f} {overlap:>8}")
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.delete:
        path.unlink()


if __name__ == "__main__":
    main()
