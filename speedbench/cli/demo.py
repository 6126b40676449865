"""``speedbench demo``: build SPEED-Lite, then run the demo plan with ``speedbench sweep``.

What it runs (defaults; ``make demo`` uses them):

1. ``lite_qualitative`` (8 prompts per category, prompts up to 600 o200k tokens) and
   ``lite_throughput_1k`` (16 per entropy tier) are built into ``./speed-bench`` (kept and reused
   when already there). They are sampled from the full ``qualitative`` / ``throughput_1k``
   configs when the folder has them; otherwise from small parents built on the spot (qualitative:
   48 candidates per category embedded, 24 chosen by greedy+swap; throughput: 16 per tier).
   ``random_1k`` (16 prompts of uniformly random o200k tokens, the paper's synthetic control) too.
2. The throughput and random prompts are re-fitted with ``speedbench fit-isl`` to exactly 1,000
   tokens of the tiny model's tokenizer (``./speed-bench-fitted``), since the 1,000 o200k tokens of
   ``throughput_1k`` are about 2,500 tokens of its 512-token vocabulary and prefill on one CPU
   core would dominate the demo.
3. ``speedbench sweep examples/sweep/local.toml --out demo-output``: llama.cpp (xllamacpp) serves
   ``stories260K-ctx16k-f32.gguf`` with its Q4_0 draft at K = 2 and K = 4 and without speculation
   (the baseline), one server at a time; the qualitative subset at concurrency 1 and 4 and the
   throughput subset at 1, 2, 4 against each; then the whole sweep's report
   (``demo-output/sweep.html``, and ``demo-output/report/report.html`` from ``speedbench report``).
   Rerunning resumes: finished runs are kept (``--fresh`` starts over).

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
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.options import add_arguments, option, reuse
from speedbench.settings import AnalysisOptions, QualitativeOptions, SharedOptions

QUALITATIVE = "lite_qualitative"
THROUGHPUT = "lite_throughput_1k"
RANDOM = "random_1k"  # the random-token control of the same length (--per-tier prompts)
DEMO_PLAN = Path(__file__).resolve().parents[2] / "examples" / "sweep" / "local.toml"
# The demo plan reads its dataset folders from these (defaults: ./speed-bench, ./speed-bench-fitted).
DATASET_ENV, FITTED_ENV = "SPEEDBENCH_DEMO_DATASET", "SPEEDBENCH_DEMO_FITTED"


@dataclass(kw_only=True)
class DemoOptions:
    """``speedbench demo``'s options, declared once (``speedbench.options``)."""

    sources: Path | None = reuse(SharedOptions, "sources")
    models: Path | None = option("--models", default=None, parse=Path, help=(
        "folder with the stories260K GGUFs and tokenizer (default: $SPEEDBENCH_MODELS)"))
    dataset: Path = option("--dataset", default=Path("speed-bench"), parse=Path, help="dataset folder to build into")
    plan: Path = option("--plan", default=DEMO_PLAN, parse=Path, help="the sweep plan to run")
    out: Path = option("--out", default=Path("demo-output"), parse=Path, help="the sweep's folder (runs, report)")
    fresh: bool = option("--fresh", default=False, help="start the measurements over (default: resume)")
    per_category: int = option("--per-category", default=8, parse=int, help="lite_qualitative: prompts per category")
    per_tier: int = option("--per-tier", default=16, parse=int, help="lite_throughput_1k: prompts per entropy tier")
    pool_cap: int = reuse(QualitativeOptions, "pool_cap", default=48, help=(
        "qualitative parent build (when the folder has no qualitative config): candidates embedded per category, "
        "a seeded sample (keeps the build short on a CPU)"))
    parent_per_category: int = option("--parent-per-category", default=24, parse=int, help=(
        "qualitative parent build: prompts chosen per category by greedy+swap from the pool"))
    max_prompt_tokens: int = option("--max-prompt-tokens", default=600, parse=int, help=(
        "lite_qualitative: leave out prompts longer than this many o200k tokens (all turns)"))
    rebuild: bool = option("--rebuild", default=False, help="rebuild the lite configs even when present")
    num_resamples: int = reuse(AnalysisOptions, "num_resamples")  # --resamples, as run and report
    no_progress: bool = reuse(SharedOptions, "no_progress")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="end to end on a tiny local model: build SPEED-Lite, then sweep the demo plan (SD at K=2, 4 and a baseline)",
        description=__doc__.split("\n\n")[0] + " Offline; 22 min 26 s on a shared 2-core machine at load 8.1-16.7 "
                    "(bench/README.md; a rerun measures only what is missing). "
                    "Writes demo-output/sweep.html and demo-output/report/report.html.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, DemoOptions)
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

    wanted = [c for c in (QUALITATIVE, THROUGHPUT, RANDOM) if args.rebuild or not data_file(args.dataset, c).exists()]
    if not wanted:
        print(f"   {QUALITATIVE}, {THROUGHPUT} and {RANDOM} already in {args.dataset} (pass --rebuild to rebuild)")
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
    """A copy of the dataset whose throughput and random prompts are exactly 1,000 target tokens,
    beside the dataset folder (made again when missing or with --rebuild). Unfitted, a random
    prompt is about 5,800 tokens of the 512-token vocabulary: more than a server slot holds."""
    from speedbench.cli import main as cli_main
    from speedbench.dataset_builder.writer import data_file

    fitted = args.dataset.parent / f"{args.dataset.name}-fitted"
    if all(data_file(fitted, c).exists() for c in (THROUGHPUT, RANDOM)) and not args.rebuild:
        print(f"   {THROUGHPUT} and {RANDOM} already fitted in {fitted} (pass --rebuild to fit again)")
        return fitted
    shutil.rmtree(fitted, ignore_errors=True)
    argv = ["fit-isl", str(args.dataset), "--tokenizer", str(models), "--configs", f"{THROUGHPUT},{RANDOM}",
            "--out", str(fitted),
            "--sources", str(sources)] + (["--no-progress"] if args.no_progress else [])
    if cli_main(argv) != 0:
        raise DemoError("speedbench fit-isl failed (see above)")
    return fitted


def sweep(args, dataset: Path, fitted: Path, models: Path):
    """``speedbench sweep PLAN --out OUT`` with the demo's folders; returns the report's files."""
    from speedbench.sweep import PlanError, load_plan
    from speedbench.sweep.report import write_sweep_report
    from speedbench.sweep.runner import run_sweep

    os.environ.update({DATASET_ENV: str(dataset), FITTED_ENV: str(fitted), settings.MODELS_ENV: str(models)})
    print(f"   speedbench sweep {args.plan} --out {args.out}   (dataset {dataset}, throughput prompts {fitted})")
    try:
        plan = load_plan(args.plan)
        outcome = run_sweep(plan, args.out, progress=not args.no_progress,
                            log=lambda text: print(text, file=sys.stderr, flush=True))
    except PlanError as error:
        raise DemoError(str(error)) from None
    if outcome.failed:
        raise DemoError("; ".join(f"{key}: {message}" for key, message in outcome.failed.items()))
    return write_sweep_report(plan, outcome, args.out, num_resamples=args.resamples)


def demo_assets(args) -> tuple[Path, Path]:
    """The source mirror and the model folder: --sources / --models, the environment, else
    ``speedbench.assets.locate`` (the shared folder, the cache, or a fetch of the demo's files)."""
    from speedbench.engine import DEFAULT_DRAFT, DEFAULT_TARGET

    sources, models = args.sources or settings.sources_dir(), args.models or settings.models_dir()
    if sources is None or models is None:
        from speedbench.assets.locate import AssetsNotFound, locate

        try:
            found = locate("demo", progress=not args.no_progress, log=lambda text: print(text, flush=True))
        except AssetsNotFound as error:
            raise DemoError(str(error)) from None
        sources, models = sources or found.sources, models or found.models
    fetch_hint = "run `speedbench assets fetch --only demo`, or"
    if not sources.is_dir():
        raise DemoError(f"source mirror not found ({sources}); {fetch_hint} pass --sources or set SPEEDBENCH_SOURCES")
    for name in (DEFAULT_TARGET, DEFAULT_DRAFT, "tokenizer.json"):
        if not (models / name).is_file():
            raise DemoError(f"{models / name} not found; {fetch_hint} pass --models or set SPEEDBENCH_MODELS")
    return sources, models.resolve()


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        sources, models = demo_assets(args)
    except DemoError as error:
        print(f"speedbench demo: {error}", file=sys.stderr)
        return 2
    if args.fresh:
        shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    try:
        with _stage(f"1/3 build SPEED-Lite ({QUALITATIVE}, {THROUGHPUT}) and {RANDOM} into {args.dataset}", timings):
            build_lite(args, sources)
        with _stage(f"2/3 fit {THROUGHPUT} and {RANDOM} prompts to 1,000 target tokens", timings):
            fitted = fit_throughput(args, sources, models)
        with _stage(f"3/3 sweep {args.plan.name}: speculation at K = 2 and 4, and the baseline", timings):
            files = sweep(args, args.dataset, fitted, models)
    except DemoError as error:
        print(f"speedbench demo: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nspeedbench demo interrupted; the server is stopped, finished requests are kept in "
              f"{args.out / 'runs'}: run it again to resume", file=sys.stderr)
        return 130
    total = time.perf_counter() - started
    (args.out / "demo.json").write_text(json.dumps({
        "stages_s": timings, "total_s": round(total, 1), "argv": sys.argv, "plan": str(args.plan),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"},
    }, indent=1) + "\n")
    print("\n== summary")
    for line in files.summary:
        print("   " + line)
    print(f"\nreport: {files.html}  (every run: {files.report_html}); total {total:.0f} s")
    print("Note: a 260K-parameter model gets no real speedup from speculative decoding (each step costs about a "
          "tenth of a millisecond, so drafting overhead dominates). The demo shows the pipeline and the statistics "
          "(acceptance per category and position, Pareto curves, the best draft length per batch size, "
          "Appendix-G estimate vs measured), not a speedup.")
    return 0
