"""`speedbench resolve`: fill placeholder rows from the sources (this project's exports or the published parquet)."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path


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
            "Published rows are rebuilt for HLE, StackSelect and BAMBOO; other published placeholders "
            "(MT-Bench-101, RoleBench, CoSER, ...) are listed with the reason, and so is any row with a "
            "placeholder in a later turn; the exit status is 1 while any is left."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("input", type=Path, help="dataset folder or parquet file")
    parser.add_argument("--out", type=Path, required=True, help="where to write the resolved folder or file")
    parser.add_argument("--sources", type=Path, default=None,
                        help="source folder (the offline mirror); default: $SPEEDBENCH_SOURCES")
    parser.add_argument("--config", default=None,
                        help="config of a single parquet file (throughput_<N>k sets the length); "
                             "default: the folder name data/<config>/ when present")
    parser.add_argument("--seed", type=int, default=0, help="seed for demonstrations of published HLE rows")
    parser.add_argument("--allow-unresolved", action="store_true",
                        help="exit 0 even if placeholders are left (they are still reported)")
    parser.set_defaults(func=run)


def _config_of(path: Path, given: str | None) -> str | None:
    if given:
        return given
    return path.parent.name if path.parent.parent.name == "data" else None


def resolve_file(path: Path, out: Path, sources: Path, config: str | None, seed: int):
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.redistribution import resolve_rows, rows_from_table, write_like
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for unreadable files
        raise SystemExit(f"speedbench resolve: {path}: not a readable parquet file ({error})")
    missing = {"question_id", "turns", "source", "src_id"} - set(table.column_names)
    if missing:
        raise SystemExit(f"speedbench resolve: {path}: missing column(s) {sorted(missing)}")
    rows, report = resolve_rows(rows_from_table(table), sources, config=config, seed=seed)
    write_like(table, rows, out)
    return report


def run(args: argparse.Namespace) -> int:
    sources = args.sources or (Path(os.environ["SPEEDBENCH_SOURCES"]) if os.environ.get("SPEEDBENCH_SOURCES") else None)
    if sources is None or not Path(sources).is_dir():
        print(f"speedbench resolve: source folder not found: {sources} (pass --sources or set SPEEDBENCH_SOURCES)",
              file=sys.stderr)
        return 2
    if not args.input.exists():
        print(f"speedbench resolve: {args.input}: not found", file=sys.stderr)
        return 2
    if args.input.is_file():
        jobs = [(args.input, args.out, _config_of(args.input, args.config))]
    else:
        files = sorted(args.input.glob("data/*/*.parquet"))
        if not files:
            print(f"speedbench resolve: {args.input}: no data/<config>/*.parquet files", file=sys.stderr)
            return 2
        if args.out.resolve() != args.input.resolve():
            shutil.copytree(args.input, args.out, dirs_exist_ok=True)
        jobs = [(f, args.out / f.relative_to(args.input), f.parent.name) for f in files]
    left = 0
    for path, out, config in jobs:
        report = resolve_file(path, out, Path(sources), config, args.seed)
        print(f"{path} ({config or 'unknown config'}): {report.summary()}")
        left += len(report.unresolved)
    if left and not args.allow_unresolved:
        print(f"speedbench resolve: {left} placeholder row(s) left; do not benchmark this dataset", file=sys.stderr)
        return 1
    return 0
