"""``speedbench run``: measure a serving engine on a dataset config (the measurement client)."""
from __future__ import annotations

import argparse
import json
import sys

from speedbench.settings import ENGINE_NAMES, MAX_ERRORS, READ_TIMEOUT_S, REQUEST_TIMEOUT_S


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _float_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive rates, got {text!r}")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="measure an engine: stream pre-tokenized prompts, record chunks, write results",
        description=(
            "Send a dataset config's prompts, tokenized once with the target tokenizer, to a serving "
            "engine as token ids; record every streamed chunk with its arrival time; sweep closed-loop "
            "concurrency (or open-loop Poisson rates); write RUN_DIR/records.jsonl, manifest.json, "
            "counters.jsonl and results.json and print a summary table. Rerunning the same command "
            "resumes an interrupted run."
        ),
    )
    parser.add_argument("--engine", required=True, choices=ENGINE_NAMES)
    parser.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--tokenizer", required=True, help="folder with the target model's tokenizer.json")
    parser.add_argument("--dataset", required=True,
                        help="dataset folder written by `speedbench build` (data/<config>/*.parquet) or in the "
                             "reference framework's prepared layout (speed/<config>/test.parquet), or a Hub "
                             "dataset id such as nvidia/SPEED-Bench[@REVISION] (read from the datasets cache; "
                             "see --online)")
    parser.add_argument("--online", action="store_true",
                        help="let a Hub --dataset be downloaded (HF_ENDPOINT, HF_TOKEN) into the datasets cache; "
                             "without it only the cache is read")
    parser.add_argument("--config", required=True, help="dataset config, e.g. qualitative, throughput_1k")
    parser.add_argument("--out", required=True, help="run folder (created; resumed when it exists)")
    parser.add_argument("--limit", type=int, help="first N rows only")
    parser.add_argument("--concurrency", type=_int_list, default=None,
                        help="closed-loop concurrency sweep (default 1,2,4,8,16,32,64,128,256,512)")
    parser.add_argument("--request-rate", type=_float_list, default=None,
                        help="open loop instead: Poisson arrivals at these rates (requests/s), comma-separated")
    parser.add_argument("--arrival-seed", type=int, default=0, help="seed of the Poisson arrivals (default 0)")
    parser.add_argument("--max-tokens", type=int, default=4096, help="output tokens per request (default 4096)")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    parser.add_argument("--top-p", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0, help="sampling seed sent to the engine (default 0)")
    parser.add_argument("--ignore-eos", action="store_true", help="generate exactly --max-tokens tokens")
    parser.add_argument("--prompt-mode", choices=["chat", "completion"], default="chat",
                        help="chat: apply the chat template with add_generation_prompt (default); "
                             "completion: raw text with the tokenizer's own special tokens")
    parser.add_argument("--model", help="model name sent in the request (OpenAI-style engines)")
    parser.add_argument("--extra-body", type=json.loads, default={},
                        help="JSON object merged into every request body (engine-specific options)")
    parser.add_argument("--workers", type=int, default=1,
                        help="client processes (default 1); with --ray, Ray actors of one CPU each")
    parser.add_argument("--ray", metavar="auto|ADDRESS", default=None,
                        help="run the --workers as Ray actors spread over a Ray cluster's nodes: auto (the cluster "
                             "this host joined with `ray start`) or the head's HOST:PORT; needs "
                             "pip install 'speed-bench[ray]' on every node")
    parser.add_argument("--warmup", type=int, default=0,
                        help="warmup requests per load point, run first and excluded from results (default 0)")
    parser.add_argument("--max-errors", type=int, default=MAX_ERRORS,
                        help=f"error budget: stop the run after this many failed requests (default {MAX_ERRORS})")
    parser.add_argument("--request-timeout", type=float, default=REQUEST_TIMEOUT_S,
                        help=f"seconds per request (default {REQUEST_TIMEOUT_S:g})")
    parser.add_argument("--read-timeout", type=float, default=READ_TIMEOUT_S,
                        help=f"seconds without a byte before a request times out (default {READ_TIMEOUT_S:g})")
    parser.add_argument("--draft-length", type=int, default=None,
                        help="K, for chunk-based acceptance when the engine does not report it")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="relative AL difference between sources that is flagged (default 0.02)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for CIs (default 1000)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speedbench.client.engines.base import SamplingOptions
    from speedbench.client.execution.phase import ErrorBudgetExceeded
    from speedbench.client.execution.ray_pool import RayClusterError
    from speedbench.client.recording.summary import format_summary
    from speedbench.client.run.options import DEFAULT_CONCURRENCY, RunConfigError, RunOptions
    from speedbench.client.run.runner import execute_run
    from speedbench.client.data.workload import WorkloadError
    from speedbench.tokenization.target import TokenizerError

    options = RunOptions(
        engine=args.engine, url=args.url, tokenizer=args.tokenizer, dataset=args.dataset, config=args.config,
        out=args.out, limit=args.limit, concurrency=args.concurrency or list(DEFAULT_CONCURRENCY),
        request_rates=args.request_rate, arrival_seed=args.arrival_seed,
        sampling=SamplingOptions(max_tokens=args.max_tokens, temperature=args.temperature,
                                 ignore_eos=args.ignore_eos, seed=args.seed, top_p=args.top_p),
        prompt_mode=args.prompt_mode, model=args.model, extra_body=args.extra_body, workers=args.workers,
        ray=args.ray, warmup=args.warmup, max_errors=args.max_errors, request_timeout_s=args.request_timeout,
        read_timeout_s=args.read_timeout, draft_length=args.draft_length, agreement_tolerance=args.tolerance,
        num_resamples=args.resamples, progress=not args.no_progress, online=args.online)
    try:
        # Warnings (a missing acceptance source and the server flag it needs) go to stderr.
        results = execute_run(options, log=lambda text: print(text, file=sys.stderr, flush=True))
    except ErrorBudgetExceeded as error:
        print(f"speedbench run stopped: {error}. Records so far are in {args.out}/records.jsonl; "
              f"rerun the same command to resume.", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(f"\nspeedbench run interrupted; complete records are in {args.out}/records.jsonl; "
              f"rerun the same command to resume.", file=sys.stderr)
        return 130
    except (RunConfigError, RayClusterError, WorkloadError, TokenizerError, ValueError) as error:
        print(f"speedbench run: {error}", file=sys.stderr)
        return 2
    print(format_summary(results))
    print(f"\nwrote {args.out}/records.jsonl, manifest.json, counters.jsonl, results.json")
    return 0
