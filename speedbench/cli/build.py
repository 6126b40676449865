"""`speedbench build`: build dataset configs into a Hugging Face dataset folder (and optionally push it)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.options import add_arguments, nested, option, reuse
from speedbench.settings import BUILD_DEFAULTS, QualitativeOptions, SharedOptions

DEFAULT_OUT = Path("speed-bench")


@dataclass(kw_only=True)
class BuildCommandOptions:
    """``speedbench build``'s options, declared once (``speedbench.options``); the defaults of what a
    builder reads are ``BuildOptions``' (``BUILD_DEFAULTS``), the qualitative selection options are
    shared with curate (``QualitativeOptions``)."""

    configs: str = option("--configs", default="qualitative", help=(
        "comma-separated config names (e.g. qualitative,throughput_1k); 'all' builds every registered config; "
        "'list' prints them"))
    sources: Path | None = reuse(SharedOptions, "sources")
    out: Path = option("--out", default=DEFAULT_OUT, parse=Path, help="dataset folder to write")
    seed: int = option("--seed", default=0, parse=int, help="seed for every random choice")
    per_tier: int = option("--per-tier", default=BUILD_DEFAULTS.per_tier, parse=int,
                           help="throughput: prompts per entropy tier")
    per_category: int = option("--per-category", default=BUILD_DEFAULTS.per_category, parse=int,
                               help="qualitative: prompts selected per category")
    allow_short: bool = option("--allow-short", default=False, help=(
        "write a category whose candidate pool is smaller than asked (noted in the dataset card) instead of failing"))
    qualitative: QualitativeOptions = nested(QualitativeOptions)
    online: bool = option("--online", default=False, help=(
        "read the reference sources from the Hugging Face Hub (pinned revisions) instead of the mirror where an "
        "adapter knows how"))
    hub_revisions: Path | None = option("--hub-revisions", default=None, parse=Path, metavar="JSON", help=(
        "with --online: a JSON file {hub_repo_id: commit} pinning the Hub sources (default: the pins in the "
        "adapters, else main resolved once and recorded in manifest.json)"))
    push: str | None = option("--push", default=None, metavar="REPO_ID",
                              help="after building, upload the folder to this Hub dataset repo")
    private: bool = option("--private", default=False, help="with --push: create the repo private")
    no_progress: bool = reuse(SharedOptions, "no_progress")
    placeholders: bool = option("--placeholders", default=False, help=(
        "export mode for publishing: rows from sources that may not be redistributed become placeholders; "
        "'speedbench resolve' fills them back"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build the SPEED-Bench dataset (Qualitative and Throughput configs) into a folder",
        description=(
            "Build dataset configs from the source files and write them as a Hugging Face dataset "
            "folder: data/<config>/*.parquet, README.md (the dataset card) and manifest.json. "
            "Configs already in the folder are kept. Load the result with "
            "load_dataset('<folder>', '<config>', split='test')."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, BuildCommandOptions)
    parser.set_defaults(func=run)


def _resolve_sources(args: argparse.Namespace) -> Path:
    sources = args.sources or settings.sources_dir()
    if sources is None:
        raise SystemExit("speedbench build: no sources: pass --sources DIR or set SPEEDBENCH_SOURCES")
    if not sources.is_dir():
        raise SystemExit(f"speedbench build: source folder not found: {sources}")
    return sources


def build_options(args: argparse.Namespace) -> dict:
    """The options every config builder reads from ``BuildContext.options``."""
    options = {
        "per_tier": args.per_tier,
        "per_category": args.per_category,
        "allow_short": args.allow_short,
        "selector": args.selector,
        "embedder": args.embedder,
        "pool_cap": args.pool_cap,
        "embed_workers": args.embed_workers,
        "dedup_threshold": args.dedup_threshold,
        "online": args.online,
        "placeholders": getattr(args, "placeholders", False),
    }
    if args.hub_revisions is not None:
        options["hub_revisions"] = str(args.hub_revisions)
    if args.embedding_cache is not None:
        options["embedding_cache"] = str(args.embedding_cache)
    for name in ("embedding_url", "embedding_model"):   # only when given: the default manifest stays as it was
        if getattr(args, name, None):
            options[name] = getattr(args, name)
    return options


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from speedbench.dataset_builder.registry import BuildContext, available_configs
    from speedbench.dataset_builder.writer import write_dataset

    builders = available_configs()
    if args.configs.strip() == "list":
        print("\n".join(sorted(builders)))
        return 0
    names = sorted(builders) if args.configs.strip() == "all" else [
        name.strip() for name in args.configs.split(",") if name.strip()]
    unknown = [name for name in names if name not in builders]
    if unknown:
        print(f"speedbench build: unknown config(s) {', '.join(unknown)}; "
              f"available: {', '.join(sorted(builders)) or '(none)'}", file=sys.stderr)
        return 2
    sources = _resolve_sources(args)
    options = build_options(args)
    ctx = BuildContext(sources=sources, out_dir=args.out, seed=args.seed, options=options,
                       progress=not args.no_progress)
    built = []
    for name in tqdm(names, desc="configs", unit="config", disable=not ctx.progress or len(names) == 1):
        try:
            built.append(builders[name](_context_for(ctx, name)))
        except (FileNotFoundError, ValueError) as error:
            print(f"speedbench build: config {name!r} failed: {error}", file=sys.stderr)
            return 1
        if getattr(args, "placeholders", False):
            from speedbench.dataset_builder.redistribution import export_placeholders
            built[-1].rows = export_placeholders(built[-1].rows, sources, name)
        # Write as each config finishes so a later failure does not lose earlier work.
        write_dataset(args.out, [built[-1]], {"seed": args.seed, "options": options,
                                              "sources": str(sources), "config": name})
    print(summary(args.out, built))
    if args.push:
        from speedbench.dataset_builder.publish import push_dataset
        url = push_dataset(args.out, args.push, private=args.private)
        print(f"pushed {args.out} to {url}")
    return 0


def _context_for(ctx, name: str):
    from dataclasses import replace
    return replace(ctx, options={**ctx.options, "config": name})


def summary(out_dir: Path, built: list) -> str:
    """Rows per config and category, then every report a builder attached (e.g. the diversity table)."""
    lines = [f"wrote {out_dir}/"]
    for config in built:
        per_category: dict[str, int] = {}
        for row in config.rows:
            per_category[row.category] = per_category.get(row.category, 0) + 1
        multiturn = sum(row.multiturn for row in config.rows)
        lines.append(f"  {config.name}: {len(config.rows)} rows ({multiturn} multi-turn) in "
                     f"data/{config.name}/")
        lines += [f"    {category:<14} {count:>5}" for category, count in per_category.items()]
    for config in built:
        report = config.stats.get("report_markdown")
        if report:
            lines += ["", report.rstrip()]
    return "\n".join(lines)
