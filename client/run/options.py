"""``RunOptions``: everything ``speedbench run`` accepts, declared once.

Each field is an option (``speedbench.options.option``): its flag, help, parser and default, and
whether the manifest records it and a resume compares it. ``speedbench run``'s parser, the
manifest's ``options``, the resume check and the workers' ``ClientSettings`` are all derived from
these fields; adding a field adds the flag everywhere. The options every request needs (engine,
URL, tokenizer, sampling, timeouts, ...) are declared in ``RequestOptions``, the analysis options
``speedbench report`` shares (--tolerance, --resamples) in ``speedbench.settings.AnalysisOptions``;
this class extends both.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from speedbench import options as declared
from speedbench.client.engines.base import REQUESTS
from speedbench.client.execution.phase import TARGET, ClientSettings, RequestOptions
from speedbench.options import names, option, positive_floats, positive_ints, reuse
from speedbench.records import RECORDS_NAME
from speedbench.settings import ERROR_KINDS, TRANSIENT_ERROR_KINDS, AnalysisOptions, SharedOptions

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# The manifest's identity fields: a resume needs the same engine, server, dataset config and tokenizer.
RESUME_KEYS = ("engine", "url", "dataset_config", "dataset_config_sha256", "tokenizer_sha256", "prompt_mode")
# Recorded options that are not fields but follow from them (``RunOptions.manifest_options``).
DERIVED_RESUME_OPTIONS = ("load_shape", "points")

DATASET, LOAD, ANALYSIS, OUTPUT = "dataset", "load", "analysis", "output"  # --help groups
HELP_ORDER = (TARGET, REQUESTS, DATASET, LOAD, ANALYSIS, OUTPUT)


class RunConfigError(ValueError):
    pass


def error_kinds(text: str) -> list[str]:
    """``"connection,http_5xx"`` -> the kinds; each one of ``ERROR_KINDS``."""
    kinds = names(text)
    unknown = [k for k in kinds if k not in ERROR_KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown error kind(s) {', '.join(unknown)}; known: {', '.join(ERROR_KINDS)}")
    return kinds


@dataclass(kw_only=True)
class RunOptions(RequestOptions, AnalysisOptions):
    """Everything ``speedbench run`` accepts. Build it in code with keywords
    (``RunOptions(engine=..., url=..., tokenizer=..., dataset=..., config=..., out=..., limit=8)``) or
    from the command line's namespace with ``RunOptions.from_args(args)``."""

    dataset: str = option("--dataset", group=DATASET, help=(
        "dataset folder written by `speedbench build` (data/<config>/*.parquet) or in the reference "
        "framework's prepared layout (speed/<config>/test.parquet), or a Hub dataset id such as "
        "nvidia/SPEED-Bench[@REVISION] (read from the datasets cache; see --online)"))
    config: str = option("--config", group=DATASET, help="dataset config, e.g. qualitative, throughput_1k")
    limit: int | None = option("--limit", default=None, parse=int, recorded=True, resume=True, group=DATASET,
                               help="N rows, taken round-robin across categories (throughput: entropy tiers) in a "
                                    "seeded order (docs/protocol.md)")
    categories: list[str] | None = option("--categories", default=None, parse=names, recorded=True, resume=True,
                                          group=DATASET, help="only these categories, comma-separated")
    per_category: int | None = option("--per-category", default=None, parse=int, recorded=True, resume=True,
                                      group=DATASET, help="at most N rows of each category (seeded order)")
    # a Hub dataset id may be fetched (else only the datasets cache is read)
    online: bool = option("--online", default=False, group=DATASET, help=(
        "let a Hub --dataset be downloaded (HF_ENDPOINT, HF_TOKEN) into the datasets cache; without it only "
        "the cache is read"))
    concurrency: list[int] = option("--concurrency", default_factory=lambda: list(DEFAULT_CONCURRENCY),
                                    parse=positive_ints, recorded=True, group=LOAD,
                                    help="closed-loop concurrency sweep, comma-separated")
    # open loop instead of closed loop when set
    request_rates: list[float] | None = option("--request-rate", default=None, parse=positive_floats,
                                               recorded=True, group=LOAD, help=(
        "open loop instead: Poisson arrivals at these rates (requests/s), comma-separated"))
    arrival_seed: int = option("--arrival-seed", default=0, parse=int, recorded=True, group=LOAD,
                               help="seed of the Poisson arrivals")
    # requests per load point run first and excluded from results
    warmup: int = option("--warmup", default=0, parse=int, recorded=True, resume=True, group=LOAD,
                         help="warmup requests per load point, run first and excluded from results")
    workers: int = option("--workers", default=1, parse=int, recorded=True, group=LOAD,
                          help="client processes; with --ray, Ray actors of one CPU each")
    # a Ray cluster's address: the workers run there as actors (execution.ray_pool)
    ray: str | None = option("--ray", default=None, metavar="auto|ADDRESS", recorded=True, group=LOAD, help=(
        "run the --workers as Ray actors spread over a Ray cluster's nodes: auto (the cluster this host "
        "joined with `ray start`) or the head's HOST:PORT; needs pip install 'speed-bench[ray]' on every "
        "node; a cluster with token authentication also needs RAY_AUTH_MODE=token and its RAY_AUTH_TOKEN "
        "(docs/ray.md)"))
    # K for chunk-based acceptance when the engine does not say
    draft_length: int | None = reuse(SharedOptions, "draft_length", recorded=True, group=ANALYSIS,
                                     help="K, for chunk-based acceptance when the engine does not report it")
    # a resume runs the request-turns whose last record failed transiently again (client/run/retry.py)
    retry_errors: bool = option("--retry-errors", default=False, group=LOAD, help=(
        "on a resumed run, run again the request-turns whose last record failed with a --retry-kinds kind, "
        "with the later turns of their conversations; the failed records stay in records.jsonl, superseded "
        "(docs/client.md)"))
    retry_kinds: list[str] = option("--retry-kinds", default_factory=lambda: list(TRANSIENT_ERROR_KINDS),
                                    parse=error_kinds, group=LOAD, metavar="KINDS", help=(
        f"the error kinds --retry-errors reruns, comma-separated, of {', '.join(ERROR_KINDS)}"))
    out: str = option("--out", group=OUTPUT, help="run folder (created; resumed when it exists)")
    progress: bool = reuse(SharedOptions, "no_progress", default=True, group=OUTPUT, help="no progress bar")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Every declared flag on ``parser`` (``speedbench run``'s, or a tool's that wraps it)."""
        declared.add_arguments(parser, cls, {name: parser.add_argument_group(name) for name in HELP_ORDER})

    @classmethod
    def from_args(cls, args: argparse.Namespace, **overrides) -> "RunOptions":
        """From a namespace parsed by a parser given ``add_arguments``; flags not given keep the
        defaults above; ``overrides`` by field name."""
        return declared.from_args(cls, args, **overrides)

    @property
    def load_shape(self) -> str:
        return "open" if self.request_rates else "closed"

    def points(self) -> list[tuple[str, int | None, float | None]]:
        if self.request_rates:
            return [(f"r{rate:g}", None, float(rate)) for rate in self.request_rates]
        return [(f"c{c}", int(c), None) for c in self.concurrency]

    def manifest_options(self) -> dict[str, Any]:
        """The manifest's ``options``: every field declared ``recorded``, plus the load shape and points."""
        return {**declared.recorded(self), "load_shape": self.load_shape, "points": [p[0] for p in self.points()]}

    def client_settings(self) -> ClientSettings:
        """What each worker gets: the request options and the records file."""
        return ClientSettings(**{f.name: getattr(self, f.name) for f in fields(RequestOptions)},
                              records_path=str(Path(self.out) / RECORDS_NAME))


# Manifest options that must match for a resume (others, like --workers, may change).
RESUME_OPTIONS = declared.resume_names(RunOptions) + DERIVED_RESUME_OPTIONS
