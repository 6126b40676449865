"""``speedbench compare PEER_RESULT RUN_DIR``: a peer tool's saved figures beside ours, with the causes."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench.options import add_arguments, option
from speedbench.settings import AnalysisOptions

TOOLS = ("vllm", "sglang", "llamacpp", "aiperf", "specdec")


@dataclass(kw_only=True)
class CompareOptions:
    """``speedbench compare``'s own options, declared once (``speedbench.options``)."""

    peer_result: Path = option("peer_result", parse=Path, metavar="PEER_RESULT_FILE")
    run_dir: Path = option("run_dir", parse=Path, metavar="RUN_DIR")
    tool: str | None = option("--tool", default=None, choices=TOOLS, help="which peer wrote the file (default: detected)")
    point: str | None = option("--point", default=None, help=(
        "load point of the run to compare (default: the one at the peer's concurrency, or the only one)"))
    json: Path | None = option("--json", default=None, parse=Path, metavar="OUT", help="also write the rows as JSON here")
    server_token_count: bool = option("--server-token-count", default=False, help=(
        "aiperf: count output tokens as the engine did (aiperf --use-server-token-count) instead of re-encoding "
        "the text with the run's tokenizer"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="set a peer benchmark's saved result beside our figures and explain each difference",
        description=(
            "Read a result saved by another SPEED-Bench tool (vllm bench serve --save-result JSON, SGLang "
            "bench_serving --output-file JSONL, llama.cpp speed-bench --output JSON, aiperf's "
            "profile_export_aiperf.json or its folder, a specdec_bench output folder) and a RUN_DIR written by "
            "'speedbench run'. For each figure the peer printed: its value, the same figure computed from our "
            "records by the peer's own definition (the peer view), our figure, and the cause of any difference: "
            "'equal' (same traffic; the definition is ours or how it differs is named), 'measured' (a timing, "
            "never equal across runs) or 'mismatch' (no definition explains it: the runs saw different traffic). "
            "Exits 1 when a mismatch is found. Definitions: docs/metrics.md."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, CompareOptions)
    add_arguments(parser, AnalysisOptions)  # --tolerance, --resamples: as run and report compute our figures
    parser.set_defaults(func=run)


def _token_counter(tokenizer_path: str, use_server: bool):
    """aiperf re-counts output tokens from text; with the run's tokenizer when it is here."""
    if use_server:
        return None
    from speedbench.tokenization.target import TargetTokenizer

    folder = Path(tokenizer_path or "")
    if not folder.is_dir():
        return None
    tokenizer = TargetTokenizer.from_folder(folder)
    return lambda text: len(tokenizer.encode(text))


def _provenance(peer_result: Path, folder) -> dict:
    """What the comparison was made from: speedbench's version, the peer's file and the run, hashed."""
    from speedbench import __version__
    from speedbench.fingerprint import file_sha256

    return {"generator": f"speedbench compare {__version__}",
            "peer_file": {"path": str(peer_result), "sha256": file_sha256(peer_result) if peer_result.is_file()
                          else None},
            "run": {"path": folder.path, "records_sha256": folder.records_sha256}}


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def print_rows(rows, tool: str, point: str, view: dict) -> None:
    from speedbench.peers.compare import MISMATCH

    print(f"{view['tool']} ({view['version']}) vs speed-bench, load point {point}; peer view basis: {view['basis']}")
    for note in view.get("notes") or []:
        print(f"  note: {note}")
    header = ("scope", "figure", "peer", "peer view", "ours", "verdict")
    table = [header] + [(r.scope, r.figure, _fmt(r.peer), _fmt(r.peer_view), _fmt(r.ours), r.verdict) for r in rows]
    widths = [min(36, max(len(row[i]) for row in table)) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(cell[:36].ljust(width) for cell, width in zip(row, widths)))
        if index:
            marker = "!!" if rows[index - 1].verdict == MISMATCH else "  "
            print(f"  {marker} {rows[index - 1].cause}")


def run(args: argparse.Namespace) -> int:
    from speedbench.analysis.results_types import PointFigures
    from speedbench.analysis.run_results import compute_results
    from speedbench.options import from_args
    from speedbench.peers.compare import MISMATCH, compare, detect_tool, select_point
    from speedbench.peers.ours import our_category_figures, our_figures
    from speedbench.peers.view import PEERS, peer_views
    from speedbench.analysis.run_folder import read_run_folder

    analysis = from_args(AnalysisOptions, args)
    try:
        tool = args.tool or detect_tool(args.peer_result)
        peer = PEERS[tool].read_result(args.peer_result)
        folder = read_run_folder(args.run_dir)  # RunFolderError (a ValueError) names the file
        results = compute_results(folder, tolerance=analysis.agreement_tolerance,
                                  num_resamples=analysis.num_resamples)
        point = PointFigures.from_dict(select_point(results["points"], peer.get("meta") or {}, args.point),
                                       f"{args.run_dir} results")
    except (OSError, ValueError, KeyError) as error:
        print(f"speedbench compare: {error}", file=sys.stderr)
        return 2
    name = point.run_point
    view = point.peers[tool]  # the peer view results.json holds
    count_tokens = _token_counter(folder.manifest.tokenizer_path, args.server_token_count) if tool == "aiperf" \
        else None
    if count_tokens is not None:  # aiperf re-counts the output from its text: the view again, with the tokenizer
        view = peer_views(folder.point_records(name), folder.manifest.engine, folder.counters.get(name),
                          count_tokens)[tool]
    rows = compare(tool, peer, view, our_figures(point), our_category_figures(point))
    print_rows(rows, tool, name, view)
    mismatches = [r for r in rows if r.verdict == MISMATCH]
    print(f"{len(rows)} figures: " + ", ".join(f"{v} {sum(r.verdict == v for r in rows)}"
                                               for v in dict.fromkeys(r.verdict for r in rows)))
    if args.json:
        args.json.write_text(json.dumps({**_provenance(args.peer_result, folder), "tool": tool, "point": name,
                                         "peer": peer, "view": view, "rows": [r.to_dict() for r in rows]},
                                        indent=1, default=str) + "\n")
    return 1 if mismatches else 0
