"""``speedbench demo``: build SPEED-Lite, serve a tiny model with and without speculation, measure, report.

What it runs (defaults; ``make demo`` uses them):

1. ``lite_qualitative`` (8 prompts per category, prompts up to 600 o200k tokens) and
   ``lite_throughput_1k`` (16 per entropy tier) are built into ``./speed-bench`` (kept and reused
   when already there). They are sampled from the full ``qualitative`` / ``throughput_1k``
   configs when the folder has them; otherwise from small parents built on the spot (qualitative:
   48 candidates per category embedded, 24 chosen by greedy+swap; throughput: 16 per tier). The throughput
   prompts are then re-fitted with ``speedbench fit-isl`` to exactly 1,000 tokens of the tiny
   model's tokenizer (a copy under ``demo-output/``), since the 1,000 o200k tokens of
   ``throughput_1k`` are about 2,500 tokens of its 512-token vocabulary and prefill on one CPU
   core would dominate the demo.
2. llama.cpp (xllamacpp) serves ``stories260K-ctx16k-f32.gguf`` twice: with its Q4_0 draft
   (K = 4) and without speculation (the baseline).
3. With each server: the qualitative subset at concurrency 1 and 4, and a concurrency sweep
   1, 2, 4 on the throughput subset, output capped at a few dozen tokens.
4. ``speedbench report`` over the four runs: ``demo-output/report.html`` (+ .md, .json, CSV).

A 260K-parameter model gets no real speedup from speculation (a decoding step costs about a
tenth of a millisecond, so drafting overhead dominates): the demo shows the pipeline and the
statistics, not a speedup.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

QUALITATIVE = "lite_qualitative"
THROUGHPUT = "lite_throughput_1k"


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="end to end on a tiny local model: build SPEED-Lite, serve with/without SD, measure, report",
        description=__doc__.split("\n\n")[0] + " Offline; about 5-10 minutes on 2 CPU cores. "
                    "Writes demo-output/report.html.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--sources", type=Path, default=None, help="source mirror (default: $SPEEDBENCH_SOURCES)")
    parser.add_argument("--models", type=Path, default=None,
                        help="folder with the stories260K GGUFs and tokenizer (default: $SPEEDBENCH_MODELS)")
    parser.add_argument("--dataset", type=Path, default=Path("speed-bench"), help="dataset folder to build into")
    parser.add_argument("--out", type=Path, default=Path("demo-output"), help="where runs and the report go")
    parser.add_argument("--per-category", type=int, default=8, help="lite_qualitative: prompts per category")
    parser.add_argument("--per-tier", type=int, default=16, help="lite_throughput_1k: prompts per entropy tier")
    parser.add_argument("--pool-cap", type=int, default=48,
                        help="qualitative parent build (when the folder has no qualitative config): candidates "
                             "embedded per category, a seeded sample (keeps the build short on a CPU)")
    parser.add_argument("--parent-per-category", type=int, default=24,
                        help="qualitative parent build: prompts chosen per category by greedy+swap from the pool")
    parser.add_argument("--max-prompt-tokens", type=int, default=600,
                        help="lite_qualitative: leave out prompts longer than this many o200k tokens (all turns)")
    parser.add_argument("--qualitative-concurrency", type=_ints, default=[1, 4])
    parser.add_argument("--sweep", type=_ints, default=[1, 2, 4], help="throughput concurrency sweep")
    parser.add_argument("--qualitative-max-tokens", type=int, default=32)
    parser.add_argument("--throughput-max-tokens", type=int, default=32)
    parser.add_argument("--isl", type=int, default=1000,
                        help="throughput prompts re-fitted to exactly this many target-model tokens (0: keep o200k)")
    parser.add_argument("--draft-length", type=int, default=4, help="speculative tokens per step K")
    parser.add_argument("--draft", default="stories260K-ctx16k-draft-q4_0.gguf", help="draft GGUF")
    parser.add_argument("--target", default="stories260K-ctx16k-f32.gguf", help="target GGUF")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the lite configs even when present")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples in the report")
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(func=run)


class DemoError(RuntimeError):
    pass


def _stage(name: str, timings: dict[str, float]):
    class _Timer:
        def __enter__(self):
            print(f"\n== {name}", flush=True)
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            timings[name] = round(time.perf_counter() - self.start, 1)
            if exc[0] is None:
                print(f"   ({timings[name]:.1f} s)", flush=True)

    return _Timer()


def build_lite(args, sources: Path) -> None:
    """Build the two lite configs into the dataset folder (skipped when present, unless --rebuild)."""
    from speedbench.cli.build import summary
    from speedbench.dataset_builder.registry import BuildContext, available_configs
    from speedbench.dataset_builder.writer import data_file, write_dataset

    wanted = [c for c in (QUALITATIVE, THROUGHPUT) if args.rebuild or not data_file(args.dataset, c).exists()]
    if not wanted:
        print(f"   {QUALITATIVE} and {THROUGHPUT} already in {args.dataset} (pass --rebuild to rebuild)")
        return
    builders = available_configs()
    # The parents are built only when the folder lacks them (a full build is then reused as is);
    # the Spec-Bench diversity comparison is capped too, since every compared prompt is embedded.
    options = {"per_tier": args.per_tier, "per_category": args.parent_per_category, "allow_short": True,
               "selector": "greedy_swap", "embedder": "use", "pool_cap": args.pool_cap, "dedup_threshold": 0.95,
               "online": False, "specbench_compare_cap": 8,
               "lite_per_category": args.per_category, "lite_per_tier": args.per_tier}
    built = []
    for name in wanted:
        config_options = dict(options, config=name)
        if name == QUALITATIVE and args.max_prompt_tokens:
            config_options["lite_max_prompt_tokens"] = args.max_prompt_tokens
        ctx = BuildContext(sources=sources, out_dir=args.dataset, seed=0, options=config_options,
                           progress=not args.no_progress)
        built.append(builders[name](ctx))
        write_dataset(args.dataset, [built[-1]], {"seed": 0, "options": config_options, "sources": str(sources),
                                                  "config": name, "command": "speedbench demo"})
    print(summary(args.dataset, built))


def fit_throughput(args, sources: Path, models: Path) -> Path:
    """A copy of the dataset whose throughput prompts are exactly ``--isl`` target tokens."""
    if not args.isl:
        return args.dataset
    from speedbench.cli import main as cli_main

    if args.isl != 1000:
        raise DemoError("--isl: fit-isl fits throughput_1k prompts to its bucket length, 1000 target tokens; "
                        "use 1000 or 0 (keep the o200k prompts)")
    fitted = args.out / "speed-bench-fitted"
    shutil.rmtree(fitted, ignore_errors=True)
    argv = ["fit-isl", str(args.dataset), "--tokenizer", str(models), "--configs", THROUGHPUT, "--out", str(fitted),
            "--sources", str(sources)] + (["--no-progress"] if args.no_progress else [])
    if cli_main(argv) != 0:
        raise DemoError("speedbench fit-isl failed (see above)")
    return fitted


def context_per_slot(dataset: Path, config: str, models: Path, max_tokens: int) -> int:
    """KV-cache tokens one request can need: every turn of the longest conversation plus one answer
    of ``max_tokens`` per turn (multi-turn prompts carry the previous answers), rounded up."""
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.writer import data_file
    from speedbench.tokenization.target import TargetTokenizer

    tokenizer = TargetTokenizer.from_folder(models)
    longest = 0
    for row in pq.read_table(data_file(dataset, config)).to_pylist():
        need = sum(len(tokenizer.encode(turn)) + 8 for turn in row["turns"]) + max_tokens * len(row["turns"])
        longest = max(longest, need)
    return max(512, -(-(longest + 64) // 256) * 256)


def measure(args, label: str, engine_config, runs: list[tuple[str, Path, str, list[int], int]], models: Path) -> list[Path]:
    """Start one server, run every (name, dataset, config, concurrency, max_tokens) against it."""
    from speedbench.client.engines.base import SamplingOptions
    from speedbench.client.run.options import RunOptions
    from speedbench.client.run.runner import execute_run
    from speedbench.engine import LocalEngine

    out_dirs = []
    with LocalEngine(engine_config, log_path=args.out / "logs" / f"{label}.log") as engine:
        description = engine.describe()
        print(f"   llama.cpp at {engine.url}: speculation={engine_config.speculation} "
              f"K={description['draft_length']} slots={engine_config.n_parallel} ctx/slot={engine_config.n_ctx_per_slot}")
        for name, dataset, config, concurrency, max_tokens in runs:
            run_dir = args.out / "runs" / f"{name}-{label}"
            run_dir.mkdir(parents=True)
            (run_dir / "engine.json").write_text(json.dumps(
                {**description, "label": "SD (Q4_0 draft, K=%d)" % engine_config.draft_length
                 if engine_config.speculation != "none" else "baseline (no SD)"}, indent=1) + "\n")
            options = RunOptions(
                engine="llamacpp", url=engine.url, tokenizer=str(models), dataset=str(dataset), config=config,
                out=str(run_dir), concurrency=concurrency, prompt_mode="chat",
                sampling=SamplingOptions(max_tokens=max_tokens, temperature=0.0, ignore_eos=False, seed=0),
                warmup=1, max_errors=5, request_timeout_s=300.0, read_timeout_s=120.0,
                draft_length=engine_config.draft_length if engine_config.speculation != "none" else 0,
                num_resamples=200, progress=not args.no_progress)
            print(f"   {config} at concurrency {','.join(map(str, concurrency))}, max {max_tokens} tokens -> {run_dir}")
            results = execute_run(options, log=lambda *a, **k: None)
            for point in results["points"]:
                source = point.get("primary_acceptance_source")
                al = ((point.get("acceptance") or {}).get(source) or {}).get("acceptance_length")
                tps = (point.get("latency") or {}).get("output_tps")
                print(f"     {point['run_point']}: {point['num_requests']} requests, {point['num_errors']} errors, "
                      f"output {tps or 0:.0f} tokens/s" + (f", AL {al:.2f}" if al and engine_config.speculation != "none"
                                                           else ""))
            out_dirs.append(run_dir)
    return out_dirs


def run(args: argparse.Namespace) -> int:
    from speedbench.engine import EngineConfig, default_models_dir

    started = time.perf_counter()
    sources = args.sources or (Path(os.environ["SPEEDBENCH_SOURCES"]) if os.environ.get("SPEEDBENCH_SOURCES") else None)
    if sources is None or not sources.is_dir():
        print(f"speedbench demo: source mirror not found ({sources}); pass --sources or set SPEEDBENCH_SOURCES",
              file=sys.stderr)
        return 2
    models = args.models or default_models_dir()
    for name in (args.target, args.draft, "tokenizer.json"):
        if not (models / name).is_file():
            print(f"speedbench demo: {models / name} not found; pass --models or set SPEEDBENCH_MODELS", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(args.out / "runs", ignore_errors=True)  # measurements are always fresh; the dataset is reused
    timings: dict[str, float] = {}
    try:
        with _stage(f"1/4 build SPEED-Lite ({QUALITATIVE}, {THROUGHPUT}) into {args.dataset}", timings):
            build_lite(args, sources)
        with _stage(f"2/4 fit {THROUGHPUT} prompts to {args.isl} target tokens", timings):
            throughput_dataset = fit_throughput(args, sources, models)
        qualitative_ctx = context_per_slot(args.dataset, QUALITATIVE, models, args.qualitative_max_tokens)
        throughput_ctx = context_per_slot(throughput_dataset, THROUGHPUT, models, args.throughput_max_tokens)
        slots = max(args.qualitative_concurrency + args.sweep)
        plan = [("qualitative", args.dataset, QUALITATIVE, args.qualitative_concurrency, args.qualitative_max_tokens),
                ("throughput_1k", throughput_dataset, THROUGHPUT, args.sweep, args.throughput_max_tokens)]
        run_dirs: list[Path] = []
        common = dict(target=str(models / args.target), n_parallel=slots,
                      n_ctx_per_slot=max(qualitative_ctx, throughput_ctx), n_threads=1)
        with _stage(f"3/4 measure with speculation (draft {args.draft}, K={args.draft_length})", timings):
            run_dirs += measure(args, "sd", EngineConfig(speculation="draft", draft=str(models / args.draft),
                                                         draft_length=args.draft_length, **common), plan, models)
        with _stage("3/4 measure without speculation (baseline)", timings):
            run_dirs += measure(args, "baseline", EngineConfig(speculation="none", **common), plan, models)
        with _stage(f"4/4 report into {args.out}", timings):
            from speedbench.report import ReportOptions, build_report, summary_lines

            files = build_report(run_dirs, args.out, ReportOptions(
                num_resamples=args.resamples, title="SPEED-Bench demo: stories260K on llama.cpp (SPEED-Lite)"))
    except DemoError as error:
        print(f"speedbench demo: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nspeedbench demo interrupted; the servers are stopped, partial runs are in {args.out / 'runs'}",
              file=sys.stderr)
        return 130
    total = time.perf_counter() - started
    (args.out / "demo.json").write_text(json.dumps({
        "stages_s": timings, "total_s": round(total, 1), "argv": sys.argv, "runs": [str(p) for p in run_dirs],
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"},
    }, indent=1) + "\n")
    print("\n== summary")
    for line in summary_lines(files.data):
        print("   " + line)
    print(f"\nreport: {files.html}  (also {files.markdown}, {files.json}); total {total:.0f} s")
    print("Note: a 260K-parameter model gets no real speedup from speculative decoding (each step costs about a "
          "tenth of a millisecond, so drafting overhead dominates). The demo shows the pipeline and the statistics "
          "(acceptance per category and position, Pareto curves, Appendix-G estimate vs measured), not a speedup.")
    return 0
