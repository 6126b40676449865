"""How a run recovers from injected faults: coverage after the first pass and after one --retry-errors resume.

The real llama.cpp server (xllamacpp, stories260K, draft K = 3, one slot) behind the tests' fault
proxy (tests/faults/proxy.py). At each fault rate, every generation request (first pass and resume
alike) is faulted with that probability, the fault drawn from mid-stream cut / reset before any
byte / stall past --read-timeout, all from one seeded generator (no other randomness). Per rate it
prints the share of the planned request-turns measured after the first pass and after one
``--retry-errors`` resume, the extra wall time of both over a clean run, and whether the resumed
run's figures equal the clean run's (every request-turn's token ids, the primary AL and the token
totals).

    .venv/bin/python bench/fault_recovery.py [--rates 0,10,25,50] [--rows 18] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.faults, tests.standins

from tests.faults.proxy import Fault, FaultProxy  # noqa: E402
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset  # noqa: E402

OPTIONS = ("--concurrency", "1", "--max-tokens", "48", "--draft-length", "3", "--max-errors", "100000",
           "--read-timeout", "1")
KINDS = (Fault("cut", after=3), Fault("reset"), Fault("stall", after=2))


def plan(rate: float, seed: int, size: int = 5000) -> dict[int, Fault]:
    rng = random.Random(f"{seed}/{rate}")
    return {i: rng.choice(KINDS) for i in range(size) if rng.random() < rate}


def run(proxy_url: str, dataset: Path, out: Path, models: Path, *extra: str) -> float:
    start = time.perf_counter()
    code = run_cli("llamacpp", proxy_url, dataset, out, models, *OPTIONS, *extra)
    if code != 0:
        raise SystemExit(f"speedbench run exited {code}")
    return time.perf_counter() - start


def live(out: Path) -> dict:
    records = {}
    for record in read_jsonl(out / "records.jsonl"):
        records[(record["question_id"], record["turn_index"])] = record
    return records


def figures(out: Path) -> tuple:
    point = json.loads((out / "results.json").read_text())["points"][0]
    primary = point["acceptance"].get(point["primary_acceptance_source"] or "", {})
    tokens = {k: r["output_token_ids"] for k, r in live(out).items() if r["error"] is None}
    return tokens, primary.get("acceptance_length"), point["totals"]["output_tokens"], point


def measured_share(out: Path, planned: int) -> float:
    return sum(1 for r in live(out).values() if r["error"] is None) / planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,10,25,50", help="fault rates in percent, comma-separated")
    parser.add_argument("--rows", type=int, default=18, help="conversations (every third has 3 turns)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    models = Path(os.environ.get("SPEEDBENCH_MODELS", ROOT.parent / "shared" / "models" / "stories260K"))
    from speedbench.engine import EngineConfig, LocalEngine

    config = EngineConfig(target=str(models / "stories260K-f32.gguf"), draft=str(models / "stories260K-draft-q4_0.gguf"),
                          speculation="draft", draft_length=3, n_parallel=1, n_ctx_per_slot=1024)
    rows = story_rows(args.rows, multiturn_every=3)
    planned = sum(len(r.turns) for r in rows)
    print(f"load average before: {os.getloadavg()}")
    print(f"{planned} request-turns ({args.rows} conversations), concurrency 1, 48 tokens, K = 3, "
          f"faults: cut mid-stream / reset before any byte / stall past --read-timeout 1 s, seed {args.seed}")
    with tempfile.TemporaryDirectory() as tmp, LocalEngine(config) as engine:
        dataset = write_dataset(Path(tmp) / "d", rows)
        with FaultProxy(engine.url) as proxy:
            run(proxy.url, dataset, Path(tmp) / "warm", models)  # imports, tokenizer, caches: not on the clock
            clean_s = run(proxy.url, dataset, Path(tmp) / "clean", models)
        clean = figures(Path(tmp) / "clean")
        print(f"clean run: {clean_s:.2f} s, AL {clean[1]:.4f}")
        print(f"{'rate':>5} {'faults':>7} {'measured 1st pass':>18} {'after 1 resume':>15} {'superseded':>11} "
              f"{'extra wall s':>13} {'figures = clean':>16} {'successes = clean':>18}")
        for rate in [float(r) / 100 for r in args.rates.split(",")]:
            out = Path(tmp) / f"r{rate:g}"
            with FaultProxy(engine.url, plan(rate, args.seed)) as proxy:
                first_s = run(proxy.url, dataset, out, models)
                first = measured_share(out, planned)
                resume_s = run(proxy.url, dataset, out, models, "--retry-errors")
                faults = sum(1 for _, kind in proxy.seen if kind)
            tokens, al, total, point = figures(out)
            equal = tokens == clean[0] and al == clean[1] and total == clean[2]
            subset = all(clean[0][key] == ids for key, ids in tokens.items())  # no altered success
            print(f"{rate:>5.0%} {faults:>7} {first:>18.1%} {measured_share(out, planned):>15.1%} "
                  f"{point['num_superseded']:>11} {first_s + resume_s - clean_s:>13.2f} "
                  f"{'yes' if equal else 'no':>16} {'yes' if subset else 'no':>18}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
