"""What ``speedbench vocab-coverage`` costs on a Qualitative-split-sized run.

A run of ``--requests`` requests (11 categories) of ``--tokens`` output ids each, drawn from a Zipf
law over a ``--vocab``-id target vocabulary (the shape of real token frequencies), is written as
``records.jsonl``; a drafter keeping the ``--draft-size`` lowest ids is written as an EAGLE-3
``d2t``/``t2d`` safetensors. The figures: wall and CPU seconds of the whole command (reading the
run, the draft vocabulary, the tables per category / sub-category / language, top-k 16k/32k/64k
and the AL correlation), and of the core alone (``in_vocab`` and ``group_coverage`` over every token).

    .venv/bin/python bench/vocab_coverage.py
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from speedbench.cli import main
from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run
from speedbench.metrics.vocab_coverage import group_coverage, in_vocab, token_counts, top_k_vocab


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _write_run(root: Path, args, rng) -> Path:
    dataset = make_dataset(root / "speed-bench", rows_per_category=args.requests // 11, configs=("qualitative",))
    run = make_run(root / "run", dataset, "qualitative", SimulatedEngine(report_engine_stats=True),
                   output_tokens=args.tokens, seed=0)
    path = run / "records.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        ids = (rng.zipf(1.2, size=args.tokens) - 1) % args.vocab  # the tail wraps, never piles on one id
        record["output_token_ids"], record["output_token_ids_source"] = ids.tolist(), "engine"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=880)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--vocab", type=int, default=201_088)
    parser.add_argument("--draft-size", type=int, default=32_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = _write_run(root, args, rng)
        t2d = np.zeros(args.vocab, dtype=bool)
        t2d[: args.draft_size] = True
        save_file({"d2t": np.zeros(args.draft_size, np.int64), "t2d": t2d}, str(root / "drafter.safetensors"))
        argv = ["vocab-coverage", str(run), "--draft-vocab", str(root / "drafter.safetensors"),
                "--top-k", "16000,32000,64000", "--json", str(root / "out.json")]
        with open(os.devnull, "w") as sink:
            import contextlib

            with contextlib.redirect_stdout(sink):
                code, wall, cpu = _timed(lambda: main(argv))
        doc = json.loads((root / "out.json").read_text())
        flat = np.concatenate([(rng.zipf(1.2, size=args.tokens) - 1) % args.vocab
                               for _ in range(args.requests)])
        labels = [f"c{i % 11}" for i in range(args.requests)]
        vocab = top_k_vocab(token_counts(flat), args.draft_size)
        _, core_wall, core_cpu = _timed(lambda: group_coverage(labels, [args.tokens] * args.requests,
                                                                  in_vocab(flat, vocab)))
    tokens = args.requests * args.tokens
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))  # timings are shared-machine
    print(f"run: {args.requests} requests x {args.tokens} ids = {tokens:,} tokens, vocabulary {args.vocab:,}, "
          f"drafter {args.draft_size:,} ids (exit {code})")
    print(f"speedbench vocab-coverage (draft + top-k 16k/32k/64k + correlation): {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"core in_vocab + group_coverage over {tokens:,} tokens: {core_wall * 1e3:.1f} ms wall, "
          f"{core_cpu * 1e3:.1f} ms CPU")
    print(f"coverage: draft {doc['overall']:.4f}, top-32000 {doc['top_k']['tables']['32000']['overall']:.4f}")


if __name__ == "__main__":
    main_bench()
