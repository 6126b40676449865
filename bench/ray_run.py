"""``speedbench run --ray`` against ``--workers``, side by side, on a local two-node Ray cluster.

The vLLM-format stand-in runs as its own process (fixed TTFT and step delay); the same sweep
runs once with ``--workers 2`` (two local processes) and once with ``--ray ADDRESS --workers 2``
(two Ray actors, one per node of a ``ray start`` cluster on 127.0.0.2 / 127.0.0.3, one CPU each;
``tests.standins.ray_cluster``). Printed per point and mode: wall time of the whole
``execute_run`` over all points (the Ray one includes joining the cluster, placing the actors and probing their
clocks), achieved vs requested concurrency, TTFT and step latency p50 / p99, and then the clock
estimates the Ray run wrote to its manifest, and the cluster's start time.

    .venv/bin/python bench/ray_run.py                 # about 2-3 minutes on 2 cores
    .venv/bin/python bench/ray_run.py --rows 128 --concurrency 16,64
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the stand-ins are test code: tests.standins, not installed

from speedbench.client.engines.base import SamplingOptions  # noqa: E402
from speedbench.client.run.options import RunOptions  # noqa: E402
from speedbench.client.run.runner import execute_run  # noqa: E402
from tests.standins.fixtures import story_rows, write_dataset  # noqa: E402
from tests.standins.ray_cluster import LocalRayCluster, cluster_env, free_port  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"


def _standin(port: int, step_s: float, ttft_s: float) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-m", "tests.standins.standin", "--engine", "vllm",
                               "--port", str(port), "--step", str(step_s), "--ttft", str(ttft_s)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
            return server
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the stand-in server did not start")
            time.sleep(0.1)


def _run(url: str, dataset: Path, out: Path, tokenizer: Path, args, ray: str | None) -> tuple[float, dict]:
    options = RunOptions(engine="vllm", url=url, tokenizer=str(tokenizer), dataset=str(dataset), config="tiny",
                         out=str(out), concurrency=args.concurrency, workers=2, ray=ray, num_resamples=50,
                         sampling=SamplingOptions(max_tokens=args.max_tokens, ignore_eos=True), progress=False)
    started = time.perf_counter()
    results = execute_run(options, log=lambda text: print(f"  {text}", file=sys.stderr))
    return time.perf_counter() - started, results


def _point_row(mode: str, wall: float, point: dict) -> str:
    latency = point["latency"]
    return (f"{mode:<10} {point['run_point']:>6} {wall:>8.1f} {point['requested_concurrency']:>5} "
            f"{point['achieved_concurrency']:>9.2f} {latency['ttft']['p50'] * 1e3:>9.1f} "
            f"{latency['ttft']['p99'] * 1e3:>9.1f} {latency['step_latency']['p50'] * 1e3:>9.2f} "
            f"{latency['step_latency']['p99'] * 1e3:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--concurrency", type=lambda t: [int(v) for v in t.split(",")], default=[8, 32])
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--step", type=float, default=0.01, help="stand-in seconds per step")
    parser.add_argument("--ttft", type=float, default=0.05, help="stand-in seconds to the first token")
    args = parser.parse_args()
    tokenizer = Path(os.environ.get("SPEEDBENCH_MODELS", SHARED / "models" / "stories260K"))
    os.environ.update({k: v for k, v in cluster_env().items() if k.startswith("RAY_")})
    import ray

    work = Path(tempfile.mkdtemp(prefix="speedbench-ray-bench-"))
    dataset = write_dataset(work / "d", story_rows(args.rows))
    port = free_port()
    server = _standin(port, args.step, args.ttft)
    cluster = LocalRayCluster(workers=1, cpus_per_node=1)
    try:
        started = time.perf_counter()
        cluster.start_head()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        cluster.start_workers()
        cluster.wait_for_nodes(ray)
        cluster_s = time.perf_counter() - started
        url = f"http://127.0.0.1:{port}"
        local_wall, local = _run(url, dataset, work / "local", tokenizer, args, None)
        ray_wall, remote = _run(url, dataset, work / "ray", tokenizer, args, cluster.address)
        load = os.getloadavg()
        print(f"\n{args.rows} rows x {args.max_tokens} tokens, stand-in step {args.step * 1e3:g} ms, TTFT "
              f"{args.ttft * 1e3:g} ms; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")
        print(f"{'mode':<10} {'point':>6} {'sweep s':>8} {'req':>5} {'achieved':>9} {'ttft p50':>9} {'ttft p99':>9} "
              f"{'step p50':>9} {'step p99':>9}   (ms)")
        for mode, wall, results in (("workers 2", local_wall, local), ("ray 2", ray_wall, remote)):
            for point in results["points"]:
                print(_point_row(mode, wall, point))
        manifest = json.loads((work / "ray" / "manifest.json").read_text())
        print(f"\nlocal Ray cluster (head + 1 worker node) up in {cluster_s:.1f} s; clock estimates of the Ray run:")
        for worker in manifest["clock_offsets"][0]["workers"]:
            print(f"  worker {worker['worker']} on {worker['node_ip']}: offset {worker['offset_ns'] / 1e3:+.1f} us, "
                  f"monotonic shift {worker['measured_shift_ns'] / 1e3:+.1f} us (applied {worker['shift_ns']}), "
                  f"+- {worker['uncertainty_ns'] / 1e3:.1f} us, best round trip {worker['rtt_ns'] / 1e3:.1f} us "
                  f"of {worker['probes']}")
    finally:
        ray.shutdown()
        cluster.stop()
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
