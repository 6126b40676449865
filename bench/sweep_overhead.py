"""What `speedbench sweep` costs beyond the measurements, against the same runs made one by one.

On the demo plan (examples/sweep/local.toml: llama.cpp with a draft at K = 2 and 4 and the
baseline, on SPEED-Lite), twice:

A. ``speedbench sweep`` (in this process, as the CLI runs it, progress bar on);
B. the same runs one by one: for each variant its server started the same way, then one
   ``speedbench run`` process per workload with the same options.

Measured time is, per load point, the span of its measured requests (first scheduled send to the
last stream end, from the records). Server starts are excluded from both. For A the time outside
the measured requests splits into the client's (inside ``execute_run``: tokenizing, warmup
requests, counter scrapes, results) and the sweep's own (plan, state, server description and
/metrics, stopping and checking the server gone, progress watcher, everything between runs). For
B it is each ``speedbench run`` process's wall time minus its measured spans (interpreter start
and imports included, as a user running them by hand pays them).

    .venv/bin/python bench/sweep_overhead.py [--dataset speed-bench] [--work DIR]

Prints one line per variant and per point, and the totals; the target is the sweep's own time
under 2% of the measured time.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def measured_spans(run_dir: Path) -> dict[str, float]:
    """Seconds per load point: last measured stream end minus first measured scheduled send."""
    first, last = {}, {}
    for line in (run_dir / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["warmup"]:
            continue
        point = record["run_point"]
        first[point] = min(first.get(point, record["scheduled_ns"]), record["scheduled_ns"])
        last[point] = max(last.get(point, record["end_ns"]), record["end_ns"])
    return {point: (last[point] - first[point]) / 1e9 for point in first}


def prepare(args) -> tuple[Path, Path, Path]:
    """SPEED-Lite and the fitted throughput prompts, as `speedbench demo` makes them."""
    from speedbench.cli import build_parser
    from speedbench.cli import demo
    from speedbench.engine import default_models_dir

    sources = Path(args.sources or os.environ.get("SPEEDBENCH_SOURCES") or REPO.parent / "shared" / "sources")
    models = Path(args.models or default_models_dir()).resolve()
    demo_args = build_parser().parse_args(["demo", "--sources", str(sources), "--dataset", str(args.dataset),
                                           "--no-progress"])
    with contextlib.redirect_stdout(sys.stderr):
        demo.build_lite(demo_args, sources)
        fitted = demo.fit_throughput(demo_args, sources, models)
    return args.dataset, fitted, models


def run_sweep(plan, out: Path, log) -> tuple[float, dict, dict[str, float]]:
    """Sweep A; returns its wall time, its timings, and execute_run's wall time per run folder."""
    import speedbench.client.run.runner as client_runner
    from speedbench.sweep.runner import SweepRunner

    original, walls = client_runner.execute_run, {}

    def timed(options, log=print):
        started = time.perf_counter()
        try:
            return original(options, log)
        finally:
            walls[Path(options.out).name] = time.perf_counter() - started

    client_runner.execute_run = timed
    try:
        with open(log, "w") as handle, contextlib.redirect_stderr(handle):
            started = time.perf_counter()
            outcome = SweepRunner(plan, out, progress=True, log=lambda text: print(text, file=handle)).run()
            wall = time.perf_counter() - started
    finally:
        client_runner.execute_run = original
    if outcome.failed:
        raise SystemExit(f"sweep failed: {outcome.failed}")
    return wall, outcome.timings, walls


def run_one_by_one(plan, out: Path, log) -> tuple[dict[str, float], dict[str, float]]:
    """B: per variant a server (start not counted), one `speedbench run` process per unit."""
    from speedbench.sweep import run_options
    from speedbench.sweep.server import ServerProcess
    from speedbench.sweep.units import plan_units

    walls, starts = {}, {}
    parser_keys = run_options.run_parser()
    for variant in plan.variants:
        server = ServerProcess(variant, out / "servers" / f"{variant.name}.log")
        started = time.perf_counter()
        server.start()
        starts[variant.name] = time.perf_counter() - started
        try:
            for unit in (u for u in plan_units(plan, out) if u.variant == variant):
                argv = run_options.required_argv(variant.engine, server.url, plan.tokenizer, unit.workload.dataset,
                                                  unit.workload.config, str(unit.run_dir))
                argv += ["--draft-length", str(variant.k)]
                for key, value in unit.values(plan).items():
                    argv += run_options.to_argv(parser_keys, key, value)
                started = time.perf_counter()
                with open(log, "a") as handle:
                    subprocess.run([sys.executable, "-m", "speedbench", "run", *argv], check=True,
                                   stdout=handle, stderr=handle)
                walls[unit.unit_id] = time.perf_counter() - started
        finally:
            server.stop()
    return walls, starts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", type=Path, default=REPO / "examples" / "sweep" / "local.toml")
    parser.add_argument("--dataset", type=Path, default=Path("speed-bench"))
    parser.add_argument("--sources", default=None)
    parser.add_argument("--models", default=None)
    parser.add_argument("--work", type=Path, default=None, help="where both sets of runs go (default: a temp folder)")
    args = parser.parse_args()
    from speedbench.cli.demo import DATASET_ENV, FITTED_ENV
    from speedbench.sweep import load_plan

    dataset, fitted, models = prepare(args)
    os.environ.update({DATASET_ENV: str(dataset), FITTED_ENV: str(fitted), "SPEEDBENCH_MODELS": str(models)})
    plan = load_plan(args.plan)
    work = args.work or Path(tempfile.mkdtemp(prefix="sweep-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"plan {args.plan}, work folder {work}, load average at start {os.getloadavg()}")
    sweep_wall, timings, client_walls = run_sweep(plan, work / "sweep", work / "sweep.log")
    one_walls, one_starts = run_one_by_one(plan, work / "one-by-one", work / "one-by-one.log")
    print(f"load average at the end {os.getloadavg()}")

    sweep_starts = sum(timings.get("server_start_s", {}).values())
    rows = defaultdict(lambda: defaultdict(float))
    per_point = []
    for name, wall in client_walls.items():
        variant = name.split(".")[0]
        spans_a = measured_spans(work / "sweep" / "runs" / name)
        spans_b = measured_spans(work / "one-by-one" / "runs" / name)
        row = rows[variant]
        row["points"] += len(spans_a)
        row["measured_a"] += sum(spans_a.values())
        row["client_a"] += wall - sum(spans_a.values())
        row["measured_b"] += sum(spans_b.values())
        row["outside_b"] += one_walls[name] - sum(spans_b.values())
        for point, span in spans_a.items():
            per_point.append((name, point, span, spans_b.get(point)))
    measured_a = sum(r["measured_a"] for r in rows.values())
    client_a = sum(r["client_a"] for r in rows.values())
    own = sweep_wall - sweep_starts - sum(client_walls.values())
    print("\nper point: measured span (s), sweep | one by one")
    for name, point, a, b in per_point:
        print(f"  {name:<36} {point:<4} {a:8.3f} | {b:8.3f}")
    print("\nper variant (s): points, measured A, client outside measured A, measured B, `speedbench run` outside "
          "measured B")
    for variant, r in rows.items():
        print(f"  {variant:<10} {int(r['points']):3d} {r['measured_a']:9.3f} {r['client_a']:9.3f} "
              f"{r['measured_b']:9.3f} {r['outside_b']:9.3f}")
    outside_b = sum(r["outside_b"] for r in rows.values())
    points = sum(int(r["points"]) for r in rows.values())
    print(f"\nA sweep: wall {sweep_wall:.3f} s, server starts {sweep_starts:.3f} s, measured {measured_a:.3f} s, "
          f"client outside measured {client_a:.3f} s, sweep's own {own:.3f} s")
    print(f"B one by one: server starts {sum(one_starts.values()):.3f} s, measured "
          f"{sum(r['measured_b'] for r in rows.values()):.3f} s, outside measured {outside_b:.3f} s")
    print(f"sweep's own time: {own:.3f} s = {own / measured_a:.2%} of the measured time "
          f"({own / points * 1000:.1f} ms per point, {own / len(rows):.3f} s per variant); target < 2%")
    print(f"outside the measured requests, all included: sweep {own + client_a:.3f} s vs one by one "
          f"{outside_b:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
