"""``speedbench serve``: run the local llama.cpp engine until Ctrl-C."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a GGUF model locally with llama.cpp (xllamacpp), with or without speculation",
        description=(
            "Start llama.cpp's HTTP server (PyPI wheel xllamacpp) on 127.0.0.1 and print its URL. "
            "Defaults serve the tiny stories260K model from $SPEEDBENCH_MODELS "
            "(fallback ../shared/models/stories260K) with its Q4_0 draft. Stops on Ctrl-C."
        ),
    )
    parser.add_argument("--target", help="target GGUF (path, or file name inside the models folder)")
    parser.add_argument("--draft", help="draft GGUF for --speculation draft/synthetic")
    parser.add_argument("--speculation", default="draft",
                        help="none | draft | synthetic | ngram | ngram-simple | ngram-map-k | "
                             "ngram-map-k4v | ngram-mod | ngram-cache (default: draft)")
    parser.add_argument("--draft-length", type=int, default=4, help="speculative tokens per step K (default 4)")
    parser.add_argument("--synthetic-rates", help="comma-separated unconditional acceptance per position "
                                                  "(K values, non-increasing), with --speculation synthetic")
    parser.add_argument("--synthetic-length", type=float, help="target mean acceptance length, "
                                                               "with --speculation synthetic")
    parser.add_argument("--parallel", type=int, default=4, help="server slots = max concurrent requests (default 4)")
    parser.add_argument("--ctx-per-slot", type=int, default=2048, help="KV-cache tokens per slot (default 2048)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--log", help="write the server's log to this file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    import threading

    from speedbench.engine import EngineConfig, EngineStartError, LocalEngine

    try:
        rates = [float(r) for r in args.synthetic_rates.split(",")] if args.synthetic_rates else None
        config = EngineConfig(
            target=args.target, draft=args.draft, speculation=args.speculation,
            draft_length=args.draft_length, synthetic_rates=rates, synthetic_length=args.synthetic_length,
            n_parallel=args.parallel, n_ctx_per_slot=args.ctx_per_slot, n_threads=args.threads, port=args.port,
        )
        config.check_files()
    except (ValueError, FileNotFoundError) as error:
        print(f"speedbench serve: {error}", file=sys.stderr)
        return 2

    def _stop_on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop_on_term)
    engine = LocalEngine(config, log_path=args.log)
    try:
        engine.start()
    except EngineStartError as error:
        print(f"speedbench serve: {error}", file=sys.stderr)
        return 1
    try:
        described = engine.describe()
        draft = described["models"].get("draft", {}).get("path", "-")
        print(f"speedbench serve: llama.cpp (xllamacpp {described['engine_version']}) "
              f"speculation={config.speculation} K={described['draft_length']} slots={config.n_parallel}")
        print(f"  target: {described['models']['target']['path']}")
        print(f"  draft:  {draft}")
        print(f"  metrics: {engine.url}/metrics   health: {engine.url}/health   server pid: {engine.pid}")
        print(engine.url, flush=True)
        threading.Event().wait()  # until Ctrl-C or SIGTERM
    except KeyboardInterrupt:
        print("speedbench serve: stopping", flush=True)
    finally:
        engine.stop()
    return 0
