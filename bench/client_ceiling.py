"""How many streamed chunks per second can one client core take before its own delay shows?

A server that costs almost nothing per event (``bench/ceiling_server.py``: pre-rendered vLLM
``/v1/completions`` SSE bytes from a raw asyncio protocol, each event stamped with its send time
on CLOCK_MONOTONIC) runs pinned to one core (``--server-cpu``); the client under test runs pinned
to the others. Every stream sends about ``--events`` one-token events ``--step`` seconds apart
(lengths varied by ``--spread``), so the event rate grows with the concurrency, which is raised
along a ladder. Per point: the client's added delay per chunk (its receive stamp minus the
server's send stamp, both CLOCK_MONOTONIC), p50 and p99; the chunks/s the server sent while the
closed loop was full (``steady_window``) beside what a client with no turnover time would get
(``ideal_rate``; the ratio shows a client slow to send its next request); the client's CPU per
chunk over the same stretch (``ceiling_cpu``: its whole process tree, sampled from /proc).

Two ceilings: the best point with p99 <= 1 ms and no failed request (the figure asked for; it
needs a quiet machine, a busy one pre-empts the client for milliseconds now and then), and the
noise-robust one, p50 <= 1 ms with >= 95 % of the ideal rate received.

Clients, each against a fresh server with the same settings, all on the same client core(s):

- ``speedbench``: ``speedbench.client.run.runner.execute_run`` (what ``speedbench run`` runs) with
  ``--workers 1`` and ``2``; receive stamps are the records' ``chunk_ns``, joined to the server's
  send log by response id. On a 2-core machine both workers share the one client core.
- ``aiperf`` and ``guidellm`` (PyPI, each in a cached venv of its own, ``client_overhead.tool_venv``),
  one invocation over all their levels (``ceiling_tools``): aiperf per chunk by the same method as
  ours (its raw export), guidellm by its first and last token per request (all it keeps).

    .venv/bin/python bench/client_ceiling.py --quick          # under 6 minutes on 2 cores
    .venv/bin/python bench/client_ceiling.py --profile        # cProfile of our client at --profile-concurrency
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling_cpu import CpuSampler, cpu_between  # noqa: E402
from client_overhead import MODELS, find_aiperf, tool_venv  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the stand-ins are test code: tests.standins, not installed
DELAY_LIMIT_MS = 1.0
KEPT = 0.95  # share of the ideal rate a client must receive to count as keeping up


@dataclass
class Point:
    client: str
    workers: int
    concurrency: int
    offered: float  # events/s a client with no turnover time would get (``ideal_rate``)
    achieved: float = 0.0  # events/s the server sent while the loop was full (``steady_window``)
    received: int = 0
    delay_p50_ms: float | None = None
    delay_p99_ms: float | None = None
    chunks_per_cpu_s: float | None = None  # chunks sent in the steady stretch / the client tree's CPU then
    server_late_p99_ms: float | None = None
    errors: int = 0
    method: str = "per-chunk"
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.errors == 0 and self.delay_p99_ms is not None and self.delay_p99_ms <= DELAY_LIMIT_MS

    @property
    def kept_up(self) -> bool:
        """The noise-robust reading: median delay under the limit and >= 95 % of the ideal rate received
        (a busy shared machine pre-empts the client now and then, which moves p99 but hardly p50)."""
        return (self.errors == 0 and self.delay_p50_ms is not None and self.delay_p50_ms <= DELAY_LIMIT_MS
                and self.achieved >= KEPT * self.offered)


class CeilingServer:
    def __init__(self, events: int, step_s: float, ttft_s: float, cpu: int | None, spread: float = 0.5):
        command = [sys.executable, str(REPO / "bench" / "ceiling_server.py"), "--events", str(events),
                   "--step", str(step_s), "--ttft", str(ttft_s), "--spread", str(spread)]
        if cpu is not None:
            command += ["--cpu", str(cpu)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening"):
            raise RuntimeError(f"ceiling server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{line.split()[1]}"

    def log(self) -> dict:
        with urllib.request.urlopen(self.url + "/ceiling/log", timeout=120) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()

    def measure(self, work, cpu_file: Path, cpu: int | None):
        """``work()`` while the CPU sampler watches this process tree (the server left out); returns
        (its result, the CPU samples, the server's log) and stops the server, whatever happens."""
        sampler = CpuSampler(cpu_file, [self.process.pid], cpu)
        samples = None
        try:
            result = work()
            samples = sampler.stop()
            return result, samples, self.log()
        finally:
            if samples is None:
                sampler.stop()
            self.stop()


def steady_window(log: dict, rids: set[str] | None, ttft_s: float, step_s: float) -> tuple[int, int, int]:
    """(start, end, events sent in between) while the closed loop was full: from the moment every first
    request was streaming (first arrival + TTFT + one step) to the arrival of the last request (after
    it, slots empty one by one). ``rids``: the requests of one level (None: all in the log)."""
    arrivals, sends = [], []
    for rid, arrival, stamps in zip(log["rid"], log["arrival_ns"], log["send_ns"]):
        if rids is None or rid in rids:
            arrivals.append(arrival)
            sends.extend(stamps)
    if len(sends) < 10:
        return 0, 1, 0
    start, end = min(arrivals) + int((ttft_s + step_s) * 1e9), max(arrivals)
    if end - start < 0.2e9:  # too short a full stretch (one wave): the whole run instead
        start, end = min(sends), max(sends)
    sends = np.asarray(sends, dtype=np.int64)
    return start, end, int(np.count_nonzero((sends >= start) & (sends < end)))


def settle(point: "Point", log: dict, rids: set[str] | None, args, samples) -> None:
    """The point's steady rate, and the client's CPU per chunk over the same stretch."""
    start, end, events = steady_window(log, rids, args.ttft, args.step)
    point.achieved = events / ((end - start) / 1e9)
    cpu = cpu_between(samples, start, end) if samples is not None else None
    if cpu and events:
        point.chunks_per_cpu_s = events / cpu
    point.server_late_p99_ms = log["late_ns_p99"] / 1e6


def ideal_rate(concurrency: int, args) -> float:
    """What a client with no turnover time would receive: each slot streams E[n] events per
    TTFT + mean phase (half a step) + (E[n] - 1) steps (``ceiling_server.events_for``: mean n = --events)."""
    return concurrency * args.events / (args.ttft + args.step / 2 + (args.events - 1) * args.step)


def _percentiles(point: Point, delays_ns: list[int] | np.ndarray) -> None:
    if len(delays_ns):
        delays = np.asarray(delays_ns, dtype=np.float64) / 1e6
        point.delay_p50_ms = float(np.percentile(delays, 50))
        point.delay_p99_ms = float(np.percentile(delays, 99))
        point.received = len(delays)


def _cpu_now() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_ours(url: str, concurrency: int, workers: int, requests: int, max_tokens: int, dataset: Path,
                 out: Path) -> tuple[Point, dict]:
    from speedbench.client.engines.base import SamplingOptions
    from speedbench.client.run.options import RunOptions
    from speedbench.client.run.runner import execute_run

    options = RunOptions(engine="vllm", url=url, tokenizer=str(MODELS), dataset=str(dataset), config="tiny",
                         out=str(out), limit=requests, concurrency=[concurrency], workers=workers,
                         sampling=SamplingOptions(max_tokens=max_tokens, ignore_eos=True),
                         num_resamples=0, progress=False, max_errors=0, draft_length=0)
    with phase_cpu() as cpu:
        results = execute_run(options, log=lambda *a: None)
    point = Point("speedbench", workers, concurrency, 0.0, errors=results["points"][0]["num_errors"])
    return point, {"records": out / "records.jsonl", "phase_cpu_s": cpu[0]}


@contextlib.contextmanager
def phase_cpu():
    """CPU seconds (this process and its reaped children: the workers) spent inside the run's measured
    phases only, ``processes.run_phase_in_workers`` (what the local executor runs each phase with):
    start-up, the manifest, the counter scrapes and the results are left out. Yields a one-item list
    filled on exit."""
    from speedbench.client.execution import processes

    spent = [0.0]
    original = processes.run_phase_in_workers

    def measured(*args, **kwargs):
        start = _cpu_now()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += _cpu_now() - start

    processes.run_phase_in_workers = measured
    try:
        yield spent
    finally:
        processes.run_phase_in_workers = original


def join_ours(point: Point, log: dict, records_path: Path) -> None:
    from speedbench.records import read_records

    sends = dict(zip(log["rid"], log["send_ns"]))
    delays: list[int] = []
    for record in read_records(records_path):
        stamps = sends.get(record.response_id or "")
        if not record.ok or stamps is None or len(stamps) != len(record.chunk_ns):
            point.note = f"{record.record_key}: chunks do not match the server's sends"
            continue
        delays.extend(np.subtract(record.chunk_ns, stamps).tolist())
    _percentiles(point, delays)


def max_events(args) -> int:
    return round(args.events * (1 + args.spread)) + 1  # what the server may send one request (max_tokens)


def run_point(concurrency: int, workers: int, args, context: dict) -> Point:
    """Our client at one level, against a fresh server, its CPU sampled."""
    with realtime(args.realtime):
        return _run_point(concurrency, workers, args, context)


@contextlib.contextmanager
def realtime(enabled: bool):
    """SCHED_RR while our server and client run (inherited by the server and worker processes)."""
    if enabled:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(10))
    try:
        yield
    finally:
        if enabled:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _run_point(concurrency: int, workers: int, args, context: dict) -> Point:
    server = CeilingServer(args.events, args.step, args.ttft, args.server_cpu, args.spread)
    out = context["workdir"] / f"ours_c{concurrency}_w{workers}"
    shutil.rmtree(out, ignore_errors=True)
    (point, extra), samples, log = server.measure(
        lambda: measure_ours(server.url, concurrency, workers, args.waves * concurrency, max_events(args),
                             context["dataset"], out),
        context["workdir"] / "cpu.json", args.server_cpu)
    point.offered = ideal_rate(concurrency, args)
    settle(point, log, None, args, samples)
    join_ours(point, log, extra["records"])
    return point


def print_point(point: Point) -> None:
    fmt = lambda v, spec=".2f": "-" if v is None else format(v, spec)  # noqa: E731
    per_cpu = point.chunks_per_cpu_s
    kept = 100 * point.achieved / point.offered if point.offered else None
    print(f"{point.client:<10} {point.workers:>3} {point.concurrency:>5} {point.offered:>8.0f} {point.achieved:>9.0f} "
          f"{fmt(kept, '.0f'):>5} {fmt(point.delay_p50_ms):>7} {fmt(point.delay_p99_ms):>7} "
          f"{fmt(point.server_late_p99_ms):>8} {fmt(per_cpu, '.0f'):>11} {point.errors:>4} "
          f"{'pass' if point.passed else 'FAIL':>5} {'pass' if point.kept_up else 'FAIL':>5} {point.method} "
          f"{point.note}", flush=True)


HEADER = (f"{'client':<10} {'wrk':>3} {'conc':>5} {'ideal/s':>8} {'steady/s':>9} {'kept%':>5} {'p50 ms':>7} "
          f"{'p99 ms':>7} {'srv late':>8} {'chunk/cpu-s':>11} {'err':>4} {'p99':>5} {'p50':>5}")


def ladder(workers: int, levels: list[int], args, context: dict) -> list[Point]:
    """Our client up the ladder until a point fails both readings (p99, and p50 with the rate kept)."""
    points = []
    for concurrency in levels:
        point = run_point(concurrency, workers, args, context)
        print_point(point)
        points.append(point)
        if not point.passed and not point.kept_up:
            break
    return points


def ceiling(points: list[Point], robust: bool = False) -> Point | None:
    passed = [p for p in points if (p.kept_up if robust else p.passed)]
    return max(passed, key=lambda p: p.achieved) if passed else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="coarser ladder, fewer waves (under 6 minutes)")
    parser.add_argument("--events", type=int, default=64, help="one-token events per request")
    parser.add_argument("--step", type=float, default=0.01, help="seconds between a stream's events")
    parser.add_argument("--ttft", type=float, default=0.02)
    parser.add_argument("--spread", type=float, default=0.5,
                        help="events per request vary over events x [1 - spread, 1 + spread]; 0 makes requests "
                             "started together end together (turnover bursts: the worst case)")
    parser.add_argument("--waves", type=int, default=3, help="requests per point = waves x concurrency")
    parser.add_argument("--clients", default="speedbench,aiperf,guidellm")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--levels", default=None, help="concurrency ladder for speedbench (comma list)")
    parser.add_argument("--tool-levels", default=None, help="concurrency ladder for aiperf/guidellm")
    parser.add_argument("--tool-seconds", type=float, default=None,
                        help="seconds of load per level for aiperf/guidellm (default 8, --quick 4)")
    parser.add_argument("--nice", type=int, default=0,
                        help="niceness for server and every client alike (negative needs root; on a busy shared "
                             "machine it keeps other jobs from pre-empting the measurement)")
    parser.add_argument("--realtime", action="store_true",
                        help="SCHED_RR for the server and OUR client only (root), to read a 1 ms delay on a busy "
                             "machine; never for aiperf/guidellm (aiperf's busy-waiting start-up starves its own "
                             "processes under a real-time policy), so their delays are then not comparable")
    parser.add_argument("--server-cpu", type=int, default=0)
    parser.add_argument("--client-cpus", default=None, help="cores for the client (default: all but the server's)")
    parser.add_argument("--profile", action="store_true", help="cProfile our client (workers 1) at one point")
    parser.add_argument("--profile-concurrency", type=int, default=128)
    args = parser.parse_args()
    if args.quick:
        args.waves = 2
    if args.tool_seconds is None:
        args.tool_seconds = 4.0 if args.quick else 8.0
    if args.nice:
        os.nice(args.nice)  # before anything starts: the server and every client inherit it
    levels = [int(v) for v in (args.levels or ("8,16,32,64,96,128,192,256,384,512" if args.quick else
                                               "8,16,32,48,64,80,96,128,160,192,256,320,384,512,768,1024")).split(",")]
    tool_levels = [int(v) for v in (args.tool_levels or ("2,4,8,16,32,64" if args.quick else
                                                         "2,4,8,12,16,24,32,48,64,96,128")).split(",")]
    cpus = sorted(os.sched_getaffinity(0))
    client_cpus = ({int(c) for c in args.client_cpus.split(",")} if args.client_cpus
                   else set(cpus) - {args.server_cpu} or set(cpus))
    os.sched_setaffinity(0, client_cpus)  # inherited by worker processes, aiperf and guidellm
    workdir = Path(tempfile.mkdtemp(prefix="client_ceiling_"))
    from tests.standins.fixtures import write_dataset
    from speedbench.schema import DatasetRow

    rows = [DatasetRow(category="bench", sub_category="x", turns=[f"Once upon a time {i}"], source="bench",
                       src_id=str(i)) for i in range(args.waves * max(levels + [args.profile_concurrency]))]
    context = {"workdir": workdir, "dataset": write_dataset(workdir / "dataset", rows)}
    print(f"client ceiling: {args.events} one-token events/request on average (x [1 -/+ {args.spread:g}]), step {1000 * args.step:.0f} ms, "
          f"TTFT {1000 * args.ttft:.0f} ms, {args.waves} x concurrency requests per point; server on core "
          f"{args.server_cpu}, client on cores {sorted(client_cpus)}; load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}", flush=True)
    if args.profile:
        try:
            return profile_ours(args, context)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    clients = args.clients.split(",")
    context["aiperf"] = find_aiperf() if "aiperf" in clients else None
    context["guidellm"] = tool_venv("guidellm") if "guidellm" in clients else None
    print(HEADER, flush=True)
    results: list[tuple[str, int, list[Point]]] = []
    for client in clients:
        if client == "speedbench":
            for workers in [int(w) for w in args.workers.split(",")]:
                results.append((client, workers, ladder(workers, levels, args, context)))
            continue
        if not context.get(client):
            print(f"{client}: not available (no cached venv and the install failed)")
            continue
        from ceiling_tools import sweep_aiperf, sweep_guidellm

        sweep = sweep_aiperf if client == "aiperf" else sweep_guidellm
        points = sweep(context[client], tool_levels, args, workdir)
        for point in points:
            print_point(point)
        results.append((client, 1, points))
    summary(results, len(client_cpus))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def summary(results, client_cores: int) -> None:
    load = os.getloadavg()
    print(f"\nceilings, {client_cores} client core(s), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}:\n"
          f"  p99: the best point with p99 added delay <= {DELAY_LIMIT_MS:g} ms and no error (the figure asked "
          f"for; needs a quiet machine)\n  p50: the best point with p50 <= {DELAY_LIMIT_MS:g} ms and >= "
          f"{100 * KEPT:.0f} % of the ideal rate received (robust to pre-emption on a busy machine)\n"
          f"  chunk/cpu-s in the table: chunks per CPU-second of the client's process tree (aiperf busy-waits "
          f"a whole core at any rate, so its figure is its rate, not its cost)")
    best: dict[tuple[str, bool], float] = {}
    for client, workers, points in results:
        label = f"{client} (workers {workers})" if client == "speedbench" else client
        parts = []
        for robust in (False, True):
            top = ceiling(points, robust)
            name = "p50" if robust else "p99"
            if top is None:
                parts.append(f"{name}: none from c{points[0].concurrency}")
                continue
            best[client, robust] = max(best.get((client, robust), 0.0), top.achieved)
            delay = top.delay_p50_ms if robust else top.delay_p99_ms
            parts.append(f"{name}: {top.achieved:.0f} chunks/s ({top.achieved / client_cores:.0f}/core) at "
                         f"c{top.concurrency} ({delay:.2f} ms)")
        print(f"  {label:<22} " + "; ".join(parts) + f"  [{points[0].method}]")
    for other in ("aiperf", "guidellm"):
        for robust in (False, True):
            if best.get(("speedbench", robust)) and best.get((other, robust)):
                print(f"  speedbench / {other} ({'p50' if robust else 'p99'} ceiling): "
                      f"{best['speedbench', robust] / best[other, robust]:.2f}x")


def profile_ours(args, context: dict) -> int:
    import cProfile
    import pstats

    server = CeilingServer(args.events, args.step, args.ttft, args.server_cpu, args.spread)
    out = context["workdir"] / "profile"
    try:
        profiler = cProfile.Profile()
        profiler.enable()
        measure_ours(server.url, args.profile_concurrency, 1, args.waves * args.profile_concurrency,
                     max_events(args), context["dataset"], out)
        profiler.disable()
    finally:
        server.stop()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
