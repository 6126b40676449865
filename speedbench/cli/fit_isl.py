"""`speedbench fit-isl`: re-fit Throughput prompts to exactly N tokens of one target model (after its chat template)."""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.options import add_arguments, option, reuse
from speedbench.settings import SharedOptions


@dataclass(kw_only=True)
class FitIslOptions:
    """``speedbench fit-isl``'s options, declared once (``speedbench.options``)."""

    dataset: Path = option("dataset", parse=Path, help="dataset folder written by 'speedbench build'")
    tokenizer: Path = option("--tokenizer", parse=Path, help="tokenizer.json of the target model, or the folder holding it")
    chat_template: Path | None = option("--chat-template", default=None, parse=Path,
                                        help="Jinja chat template file overriding the folder's own")
    configs: str = option("--configs", default="all", help=(
        "comma-separated throughput configs to re-fit ('all': every throughput_* present)"))
    out: Path = option("--out", parse=Path, help="folder to write (a copy of the dataset)")
    sources: Path | None = reuse(SharedOptions, "sources", help=(
        "source mirror: rows built by this project are re-rendered from it (exact instruction boundaries); "
        "default: $SPEEDBENCH_SOURCES"))
    no_progress: bool = reuse(SharedOptions, "no_progress")

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fit-isl",
        help="re-fit throughput prompts so the templated prompt is exactly N target-model tokens",
        description=(
            "The Throughput split counts lengths in o200k_base tokens. This command rewrites a dataset "
            "folder's throughput_<N>k configs so that each prompt, after the target model's chat "
            "template (or plain with its BOS when it has none), is exactly N tokens of the target "
            "tokenizer. The task instruction is never cut; short prompts are padded with "
            "'Answer now please.\\n'. The tokenizer's sha256 is recorded in fit_isl.json and manifest.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser, FitIslOptions)
    parser.set_defaults(func=run)


def load_target(tokenizer: Path, chat_template: Path | None):
    from speedbench.tokenization.target import TargetTokenizer
    folder = tokenizer.parent if tokenizer.is_file() else tokenizer
    target = TargetTokenizer.from_folder(folder)
    if chat_template is not None:
        target.chat_template = chat_template.read_text(encoding="utf-8")
    return target


def run(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from speedbench.dataset_builder.redistribution import bucket_tokens, rows_from_table
    from speedbench.dataset_builder.throughput.fit import FitError
    from speedbench.dataset_builder.throughput.target_fit import refit_rows, target_codec
    from speedbench.dataset_builder.writer import write_parquet

    if not (args.dataset / "data").is_dir():
        print(f"speedbench fit-isl: {args.dataset}: not a dataset folder (no data/)", file=sys.stderr)
        return 2
    try:
        target = load_target(args.tokenizer, args.chat_template)
    except (OSError, ValueError) as error:
        print(f"speedbench fit-isl: {error}", file=sys.stderr)
        return 2
    sources = args.sources or settings.sources_dir()
    present = sorted(p.name for p in (args.dataset / "data").iterdir() if bucket_tokens(p.name))
    names = present if args.configs == "all" else [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in names if c not in present]
    if unknown:
        print(f"speedbench fit-isl: config(s) {unknown} not in {args.dataset} (present: {present})", file=sys.stderr)
        return 2
    created = not args.out.exists()
    if args.out.resolve() != args.dataset.resolve():
        shutil.copytree(args.dataset, args.out, dirs_exist_ok=True)
    codec = target_codec(target)
    record = {"tokenizer": str(args.tokenizer), "tokenizer_sha256": target.sha256,
              "chat_template": "override" if args.chat_template else ("model" if target.has_chat_template else "none"),
              "chat_template_sha256": hashlib.sha256((target.chat_template or "").encode()).hexdigest(),
              "configs": {}}
    for name in names:
        n_tokens = bucket_tokens(name)
        for path in sorted((args.dataset / "data" / name).glob("*.parquet")):
            rows = rows_from_table(pq.read_table(path))
            try:
                refitted = refit_rows(rows, codec, n_tokens, sources if sources and Path(sources).is_dir() else None,
                                      progress=not args.no_progress)
            except FitError as error:  # e.g. a row whose instruction alone exceeds the bucket
                if created:  # a half-fitted copy must not look like a dataset
                    shutil.rmtree(args.out, ignore_errors=True)
                print(f"speedbench fit-isl: {name}: {path}: {error}"
                      f"{f'; {args.out} removed' if created else f'; {args.out} is incomplete'}", file=sys.stderr)
                return 2
            counts = {codec.count(row.turns[0]) for row in refitted}
            if counts != {n_tokens}:
                raise AssertionError(f"{name}: re-fitted prompts have {sorted(counts)} target tokens, not {n_tokens}")
            write_parquet(args.out / path.relative_to(args.dataset), refitted)
        record["configs"][name] = {"target_tokens": n_tokens, "rows": len(refitted), "verified": True}
        print(f"{name}: {len(refitted)} prompts now exactly {n_tokens} target tokens")
    (args.out / "fit_isl.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    manifest_path = args.out / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest["fit_isl"] = record
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    print(f"wrote {args.out} (tokenizer sha256 {target.sha256[:16]}...)")
    return 0
