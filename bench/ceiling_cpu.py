"""CPU time of a client's whole process tree over time, sampled from /proc by a process of its own.

The same yardstick for every client (ours in-process or in worker processes, aiperf's many
services, guidellm's workers): every ``--period`` the sampler sums ``utime + stime + cutime + cstime``
(``/proc/<pid>/stat``, clock ticks) over the tree under ``--root`` (children from
``/proc/<pid>/task/<tid>/children``), leaving out the ``--exclude`` pids and their trees (the server,
the sampler itself), and stamps the sum with CLOCK_MONOTONIC. The CPU a client spent between two
instants is then the difference of the interpolated sums, whatever the machine's load (which makes
delays noisy but hardly changes CPU time per chunk). It runs pinned to ``--cpu``, off the client's core.

    python bench/ceiling_cpu.py --root PID --exclude PID --cpu 0 --out samples.json   # until SIGTERM
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(c) for c in handle.read().split())
    except OSError:  # the process ended meanwhile
        pass
    return found


def _ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(v) for v in fields[11:15])  # utime stime cutime cstime (fields 14-17 of stat)


def tree_ticks(root: int, exclude: set[int]) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        if pid in exclude:
            continue
        total += _ticks(pid)
        stack.extend(_children(pid))
    return total


class CpuSampler:
    """Starts the sampler process on ``cpu`` for this process's tree minus ``exclude``; ``stop()``
    returns the samples as two arrays (monotonic ns, CPU seconds)."""

    def __init__(self, out: Path, exclude: list[int], cpu: int | None, period_s: float = 0.02):
        self.out = out
        command = [sys.executable, str(Path(__file__)), "--root", str(os.getpid()), "--out", str(out),
                   "--period", str(period_s), *[a for pid in exclude for a in ("--exclude", str(pid))]]
        if cpu is not None:
            command += ["--cpu", str(cpu)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "sampling":
            raise RuntimeError("the CPU sampler did not start")

    def stop(self) -> tuple[np.ndarray, np.ndarray]:
        self.process.terminate()
        self.process.wait()
        samples = json.loads(self.out.read_text())
        return np.asarray(samples["t_ns"], dtype=np.int64), np.asarray(samples["cpu_s"], dtype=np.float64)


def cpu_between(samples: tuple[np.ndarray, np.ndarray], start_ns: int, end_ns: int) -> float | None:
    """CPU seconds the tree spent between two instants (interpolated between samples); None when
    the samples do not cover the stretch."""
    times, cpu = samples
    if len(times) < 2 or start_ns < times[0] or end_ns > times[-1] or end_ns <= start_ns:
        return None
    return float(np.interp(end_ns, times, cpu) - np.interp(start_ns, times, cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=int, required=True)
    parser.add_argument("--exclude", type=int, action="append", default=[])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--period", type=float, default=0.02)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # never a real-time sampler
    except OSError:
        pass
    exclude = set(args.exclude) | {os.getpid()}
    times, cpu, running = [], [], [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    print("sampling", flush=True)
    while running[0]:
        times.append(time.monotonic_ns())
        cpu.append(tree_ticks(args.root, exclude) * TICK_S)
        time.sleep(args.period)
    args.out.write_text(json.dumps({"t_ns": times, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
