"""Replay fidelity on the real llama.cpp (xllamacpp, stories260K with its Q4_0 draft, K = 4): per category,
the AL of a draft-model run on SPEED-Lite's lite_qualitative against the AL of a run whose acceptance is
llama.cpp's synthetic mode fed that category's marginal rates from the source run's profile
(``speedbench profile`` -> ``speedbench serve --speculation synthetic --synthetic-from``).

Both ALs are the profiles' per-step means (chunk source: the prefill's lone token and each request's
last step left out). Prints one row per category and the overall row (the overall rates on every prompt).
stories260K's context is 512 tokens: prompts longer than 512 - max_tokens fail in every run alike and
are left out (the printed request counts say how many remain).

Usage: ``.venv/bin/python bench/replay_fidelity.py [--dataset DIR] [--max-tokens 256] [--concurrency 2]``;
without ``--dataset`` it builds SPEED-Lite as ``speedbench demo`` does, in bench/output/replay-fidelity.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

OUT = Path(__file__).resolve().parent / "output" / "replay-fidelity"
SHARED = Path(__file__).resolve().parents[2] / "shared"
K = 4


def _dataset(args) -> Path:
    from speedbench.cli import demo

    if args.dataset:
        return args.dataset
    parser = argparse.ArgumentParser()
    demo.register(parser.add_subparsers())
    demo_args = parser.parse_args(["demo", "--dataset", str(OUT / "speed-bench"), "--out", str(OUT / "demo"),
                                   "--no-progress"])
    demo.build_lite(demo_args, Path(os.environ.get("SPEEDBENCH_SOURCES", SHARED / "sources")))
    return demo_args.dataset


def _run(models: Path, dataset: Path, out: Path, args, categories: str | None = None, **config) -> None:
    from speedbench.cli import main
    from speedbench.engine import EngineConfig, LocalEngine

    engine_config = EngineConfig(target=str(models / "stories260K-f32.gguf"), draft=str(models / "stories260K-draft-q4_0.gguf"),
                                 draft_length=K, n_parallel=args.concurrency, n_ctx_per_slot=4096, **config)
    with LocalEngine(engine_config) as engine:
        argv = ["run", "--engine", "llamacpp", "--url", engine.url, "--tokenizer", str(models), "--dataset", str(dataset),
                "--config", "lite_qualitative", "--out", str(out), "--no-progress", "--resamples", "0",
                "--concurrency", str(args.concurrency), "--max-tokens", str(args.max_tokens), "--draft-length", str(K), "--seed-per-prompt",
                # stories260K's context is 512 tokens: longer prompts fail alike in every run and are left out
                "--max-errors", "100000"]
        if categories:
            argv += ["--categories", categories]
        if main(argv) != 0:
            raise SystemExit(f"speedbench run failed for {out}")
        (out / "engine.json").write_text(json.dumps(engine.describe()))


def main() -> None:
    from speedbench.analysis.run_profile import run_profile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    models = Path(os.environ.get("SPEEDBENCH_MODELS", SHARED / "models" / "stories260K"))
    dataset = _dataset(args)
    runs = OUT / "runs"
    shutil.rmtree(runs, ignore_errors=True)  # a fresh measurement, never a resume
    _run(models, dataset, runs / "source", args, speculation="draft")
    source = run_profile(runs / "source")
    (runs / "source-profile.json").write_text(json.dumps(source, indent=2))
    rows = []
    for name, figures in [*source["per_category"].items(), ("(overall)", source)]:
        if figures["marginal_accept_rates"] is None:
            rows.append((name, figures["mean_accept_length"], None, figures["rates_unavailable_reason"]))
            continue
        out = runs / f"replay-{name.strip('()')}"
        _run(models, dataset, out, args, None if name == "(overall)" else name, speculation="synthetic",
             synthetic_rates=[min(figures["marginal_accept_rates"][:i + 1]) for i in range(K)])
        replayed = run_profile(out)
        rows.append((name, figures["mean_accept_length"], replayed["mean_accept_length"],
                     replayed["measurement_conditions"]["num_requests"]))
    print(f"\nllama.cpp, stories260K + Q4_0 draft, K = {K}, lite_qualitative, max_tokens {args.max_tokens}, "
          f"concurrency {args.concurrency}")
    print(f"source requests: {source['measurement_conditions']['num_requests']}")
    print(f"{'category':<16} {'source AL':>10} {'replayed AL':>12} {'replayed/source - 1':>20} {'replay requests':>16}")
    for name, al, replayed, note in rows:
        diff = f"{(replayed / al - 1) * 100:+.2f}%" if replayed is not None else note
        shown = f"{replayed:.4f}" if replayed is not None else "-"
        print(f"{name:<16} {al:>10.4f} {shown:>12} {diff:>20} {note if replayed is not None else '':>16}")


if __name__ == "__main__":
    main()
