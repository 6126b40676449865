"""``speedbench export DATASET --layout vllm|sglang|specdec|llamacpp --out DIR``: our rows in a peer's layout."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.options import add_arguments, option

LAYOUTS = ("vllm", "sglang", "specdec", "llamacpp")


@dataclass(kw_only=True)
class ExportOptions:
    """``speedbench export``'s options, declared once (``speedbench.options``)."""

    dataset: Path = option("dataset", parse=Path, metavar="DATASET", help="dataset folder")
    layout: str = option("--layout", choices=LAYOUTS)
    out: Path = option("--out", parse=Path, help="folder to write into (created)")
    config: list[str] | None = option("--config", default=None, action="append", metavar="CONFIG", help=(
        "config to export (repeat for several; default: every config in the folder)"))
    name: str | None = option("--as", default=None, dest="name", metavar="NAME", help=(
        "write the one config under this name: vllm bench serve selects only the published names (qualitative, "
        "throughput_1k, ...), so e.g. --config lite_qualitative --as qualitative"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write a built, resolved dataset in another benchmark's input layout",
        description=(
            "Write the configs of a dataset folder (data/<config>/*.parquet, as 'speedbench build' or "
            "'speedbench resolve' write it) so that a peer tool runs the same rows offline, unchanged. "
            "vllm: OUT/<config>.jsonl with 'messages' (vllm bench serve --dataset-name speed_bench --dataset-path "
            "OUT; aiperf reads it too). sglang: OUT/<config>.jsonl with 'turns' (bench_serving --dataset-name "
            "speed-bench --dataset-path OUT/<config>.jsonl). specdec: OUT/speed/<config>/test.parquet "
            "(specdec_bench --dataset_path). llamacpp: OUT/nvidia/SPEED-Bench in the Hub layout (run llama.cpp's "
            "speed_bench.py from OUT). Placeholder rows are refused. OUT/export.json records what was written."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, ExportOptions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.peers.layouts import ExportError, export

    try:
        manifest = export(args.dataset, args.layout, args.out, args.config, args.name)
    except ExportError as error:
        print(f"speedbench export: {error}", file=sys.stderr)
        return 1
    for config, info in manifest["configs"].items():
        renamed = f" (config {info['source_config']})" if info["source_config"] != config else ""
        print(f"{config}: {info['rows']} rows{renamed}")
    for name in manifest["files"]:
        print(f"wrote {args.out / name}")
    for note in [manifest["peer_sends"], *manifest["notes"]]:
        print(f"note: {note}")
    return 0
