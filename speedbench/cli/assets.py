"""``speedbench assets``: the source mirror and the demo model, from ``assets.lock.json``.

``speedbench assets fetch [--only demo|all] [--out DIR]`` downloads the lock's files (plain HTTP
GETs, resumable, several at a time, a progress bar), verifies size and sha256 and writes them in
the shared layout (default: the user cache), then makes the served GGUF and tokenizer files from
the fetched checkpoint. ``SPEEDBENCH_ASSETS_MIRROR_URL`` replaces the scheme
and host of every URL. ``speedbench assets env [--only demo|all]`` finds the assets (``../shared``,
else the cache, else fetches them), makes the served model files when missing, says which it used
on stderr and prints ``export SPEEDBENCH_SOURCES=... SPEEDBENCH_MODELS=...`` for a shell
(``make demo`` and ``make test`` use it). See docs/assets.md.
"""
from __future__ import annotations

import argparse
import shlex
import sys

from speedbench import settings
from speedbench.options import add_arguments, from_args
from speedbench.settings import AssetOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("assets", help="fetch and verify the source mirror and the demo model "
                                                  "(assets.lock.json)", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="assets_command", metavar="ACTION", required=True)
    fetch = commands.add_parser("fetch", help="download and verify the lock's files into the shared layout",
                                description=__doc__.split("\n\n")[1])
    add_arguments(fetch, AssetOptions)
    fetch.set_defaults(func=run_fetch)
    env = commands.add_parser("env", help="find (or fetch) the assets; print the shell exports that point at them")
    add_arguments(env, AssetOptions)
    env.set_defaults(func=run_env)


def run_fetch(args: argparse.Namespace) -> int:
    from speedbench.assets.fetch import FetchError, fetch
    from speedbench.assets.locate import CHECKPOINT, MODEL_FOLDER, TOKENIZER, make_model_files
    from speedbench.assets.lock import LockError, load_lock, select

    options = from_args(AssetOptions, args)
    out = options.out or settings.assets_dir()
    try:
        entries = select(load_lock(options.lock) if options.lock else load_lock(), options.only)
        report = fetch(entries, out, only=options.only, mirror=settings.assets_mirror_url(),
                       workers=options.workers, progress=not options.no_progress)
    except (LockError, FetchError, OSError) as error:  # OSError: the output folder (permissions, disk full)
        print(f"speedbench assets fetch: {error}", file=sys.stderr)
        return 1
    models = out / MODEL_FOLDER
    if (models / CHECKPOINT).is_file() and (models / TOKENIZER).is_file():  # the served files, made where missing
        made = make_model_files(models)
        if made:
            print(f"{models}: made {', '.join(p.name for p in made)} from {CHECKPOINT} and {TOKENIZER}")
    mb = report.downloaded_bytes / 1e6
    print(f"{out}: {len(report.fetched)} file(s) fetched ({mb:.1f} MB in {report.seconds:.1f} s), "
          f"{len(report.present)} already in place, all {len(entries)} verified (sha256)")
    return 0


def run_env(args: argparse.Namespace) -> int:
    from speedbench.assets.locate import AssetsNotFound, locate

    options = from_args(AssetOptions, args)
    try:
        found = locate(options.only, out=options.out, workers=options.workers, progress=not options.no_progress,
                       log=lambda text: print(text, file=sys.stderr, flush=True))
    except AssetsNotFound as error:
        print(f"speedbench assets env: {error}", file=sys.stderr)
        return 1
    print(f"export SPEEDBENCH_SOURCES={shlex.quote(str(found.sources))} "
          f"SPEEDBENCH_MODELS={shlex.quote(str(found.models))}")
    return 0
