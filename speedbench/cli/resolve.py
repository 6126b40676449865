"""`speedbench resolve`: fill placeholder rows from the sources (this project's exports or the published parquet)."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.options import add_arguments, option, reuse
from speedbench.settings import SharedOptions


@dataclass(kw_only=True)
class ResolveOptions:
    """``speedbench resolve``'s options, declared once (``speedbench.options``)."""

    input: Path = option("input", parse=Path, help="dataset folder or parquet file")
    out: Path = option("--out", parse=Path, help="where to write the resolved folder or file")
    sources: Path | None = reuse(SharedOptions, "sources")
    config: str | None = option("--config", default=None, help=(
        "config of a single parquet file (throughput_<N>k sets the length); default: the folder name "
        "data/<config>/ when present"))
    seed: int = option("--seed", default=0, parse=int,
                       help="seed of the offline stand-in for the reference's HLE demonstration sampler")
    online: bool = option("--online", default=False, help=(
        "read sources the mirror lacks from the Hugging Face Hub at the reference's pinned revisions (gated "
        "cais/hle needs HF_TOKEN with access)"))
    allow_unresolved: bool = option("--allow-unresolved", default=False, help=(
        "write the output and exit 0 even if placeholders are left (they are still reported)"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "resolve",
        help="fill placeholder rows (sources that may not be redistributed) from the source files",
        description=(
            "Rows of sources that may not be redistributed ship as placeholders: a turn starts with "
            "'FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH'. This command "
            "rebuilds them from the sources named by src_id. INPUT is a dataset folder written by "
            "'speedbench build' (every data/<config>/*.parquet is resolved) or one parquet file, e.g. "
            "a published nvidia/SPEED-Bench file (pass --config, e.g. throughput_8k, for its length). "
            "Published rows are rebuilt for every source the reference resolver handles, with its formats: "
            "from the offline mirror, or with --online from the Hub at the reference's pinned revisions "
            "where the mirror lacks a source. The counts per source are printed; rows whose text may differ "
            "from the reference's, and rows left unresolved, are listed with the reason in the resolve "
            "manifest (resolve_manifest.json in a folder, <file>.resolve.json beside a file). Nothing is "
            "written while any placeholder is left (exit status 1) unless --allow-unresolved."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, ResolveOptions)
    parser.set_defaults(func=run)


def _config_of(path: Path, given: str | None) -> str | None:
    if given:
        return given
    return path.parent.name if path.parent.parent.name == "data" else None


def read_file(path: Path):
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.redistribution import RowError, rows_from_table
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for unreadable files
        raise SystemExit(f"speedbench resolve: {path}: not a readable parquet file ({error})")
    missing = {"question_id", "turns", "source", "src_id"} - set(table.column_names)
    if missing:
        raise SystemExit(f"speedbench resolve: {path}: missing column(s) {sorted(missing)}")
    try:
        return table, rows_from_table(table, str(path))
    except RowError as error:
        raise SystemExit(f"speedbench resolve: {error}") from None


def run(args: argparse.Namespace) -> int:
    from speedbench.dataset_builder.published import SourceTables
    from speedbench.dataset_builder.redistribution import describe, resolve_rows, write_like

    sources = args.sources or settings.sources_dir()
    if sources is None or not Path(sources).is_dir():
        print(f"speedbench resolve: source folder not found: {sources} (pass --sources or set SPEEDBENCH_SOURCES)",
              file=sys.stderr)
        return 2
    if not args.input.exists():
        print(f"speedbench resolve: {args.input}: not found", file=sys.stderr)
        return 2
    if args.input.is_file():
        jobs = [(args.input, args.out, _config_of(args.input, args.config))]
        manifest_path = args.out.with_name(args.out.name + ".resolve.json")
    else:
        files = sorted(args.input.glob("data/*/*.parquet"))
        if not files:
            print(f"speedbench resolve: {args.input}: no data/<config>/*.parquet files", file=sys.stderr)
            return 2
        jobs = [(f, args.out / f.relative_to(args.input), f.parent.name) for f in files]
        manifest_path = args.out / "resolve_manifest.json"
    tables = SourceTables(Path(sources), online=args.online)    # one set of source tables for every file
    results, left, manifest = [], 0, {}
    for path, out, config in jobs:
        table, rows = read_file(path)
        started = time.perf_counter()
        resolved, report = resolve_rows(rows, Path(sources), config, args.seed, online=args.online, tables=tables)
        print(f"{path} ({config or 'unknown config'}, {time.perf_counter() - started:.1f} s): {report.summary()}")
        left += len(report.unresolved)
        results.append((table, resolved, out))
        manifest[str(path.relative_to(args.input) if args.input.is_dir() else path.name)] = {
            "config": config, **describe(report)}
    if left and not args.allow_unresolved:
        print(f"speedbench resolve: {left} placeholder row(s) left, nothing written (pass --online for sources the "
              "mirror lacks, or --allow-unresolved to write them as placeholders; do not benchmark them)",
              file=sys.stderr)
        return 1
    if args.input.is_dir() and args.out.resolve() != args.input.resolve():
        shutil.copytree(args.input, args.out, dirs_exist_ok=True)
    for table, resolved, out in results:
        write_like(table, resolved, out)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps({"online": args.online, "seed": args.seed, "files": manifest},
                                        indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if left:
        print(f"speedbench resolve: {left} placeholder row(s) left (written as placeholders); do not benchmark "
              "this dataset", file=sys.stderr)
    return 0
