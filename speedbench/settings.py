"""Names and defaults that several modules share, defined once.

Only the standard library is imported here, so the CLI can read defaults for ``--help``
without loading the heavy modules that use them. The core, the client, the dataset builder
and the leaderboard all read these; none of them spells a value out again.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from speedbench import engines
from speedbench.options import option, reuse

# Engines the client speaks to (one adapter each) and the leaderboard accepts: the registry's
# (speedbench/engines/, one spec per engine).
ENGINE_NAMES = engines.names()
# Engines `speedbench serve` / LocalEngine can start on this machine.
LOCAL_ENGINES = engines.names(local=True)
# Engines reproduced by the stand-in servers of the tests (they need GPUs, or did).
STANDIN_ENGINES = engines.names(standin=True)

# A run stops after this many failed requests (a misconfigured server should not be hammered).
MAX_ERRORS = 20
# Seconds one request may take in all: long outputs at high concurrency take many minutes.
REQUEST_TIMEOUT_S = 3600.0
# Seconds without a byte from the server before a request is given up (a stalled stream).
READ_TIMEOUT_S = 300.0
# Why a request failed (TurnRecord.error_kind, client/execution/stream.py). A turn after a failed
# turn of its conversation is recorded as SKIPPED_AFTER_ERROR.
ERROR_KINDS = ("connection", "timeout", "http_429", "http_5xx", "http_4xx", "malformed", "engine_error",
               "cancelled")
SKIPPED_AFTER_ERROR = "skipped_after_error"
# The failures a resume with --retry-errors runs again by default (--retry-kinds): the network or a
# busy server, not the request. A prompt over the context (http_4xx), an engine's error object and
# a stream that does not parse are permanent until asked for (docs/client.md, "Retrying errors").
TRANSIENT_ERROR_KINDS = ("connection", "timeout", "http_429", "http_5xx", "cancelled")
# Coverage (speedbench.metrics.coverage): a load point's category is flagged in results.json and
# the report, and a bundle refused by the board (rule coverage.categories), when fewer than this
# share of its planned request-turns (the board: of its prompts) were measured.
MIN_CATEGORY_COVERAGE = 0.95

# Relative difference between two acceptance sources' acceptance length above which results, the
# report and the board flag the disagreement (``speedbench run/report --tolerance``).
AGREEMENT_TOLERANCE = 0.02
# Bootstrap resamples behind every 95% confidence interval (seeded, so the same records give the
# same interval; ``--resamples``).
NUM_RESAMPLES = 1000
# The degenerate-speculation guard (speedbench.metrics.degenerate, docs/metrics.md): an output
# loops when its last LOOP_WINDOW tokens repeat a pattern of period <= LOOP_MAX_PERIOD; a request
# is pinned when it drafted in at least PIN_MIN_STEPS steps and accepted every draft or none; a
# point (and a category) is flagged when the share of such requests exceeds DEGENERATE_SHARE.
LOOP_WINDOW = 32
LOOP_MAX_PERIOD = 4
PIN_MIN_STEPS = 8
DEGENERATE_SHARE = 0.2


@dataclass(kw_only=True)
class AnalysisOptions:
    """The analysis options ``speedbench run`` and ``speedbench report`` share, declared once
    (``speedbench.options``); ``RunOptions`` and ``ReportOptions`` extend this class, and a command
    that takes only one of them adds it with ``add_arguments(parser, AnalysisOptions, only=...)``."""

    agreement_tolerance: float = option("--tolerance", default=AGREEMENT_TOLERANCE, parse=float, recorded=True,
                                        group="analysis",
                                        help="relative AL difference between acceptance sources that is flagged")
    num_resamples: int = option("--resamples", default=NUM_RESAMPLES, parse=int, recorded=True, group="analysis",
                                help="bootstrap resamples for the 95% CIs (seeded)")


@dataclass(kw_only=True)
class SharedOptions:
    """Options several commands take, declared once (``speedbench.options``); a command offers one
    with ``reuse(SharedOptions, name, ...)``, naming only what differs there (its default or help)."""

    sources: Path | None = option("--sources", default=None, parse=Path,
                                  help="source folder (the offline mirror); default: $SPEEDBENCH_SOURCES")
    engine: str = option("--engine", choices=ENGINE_NAMES, help="the serving engine's API")
    draft_length: int | None = option("--draft-length", default=None, parse=int, help="draft length K")
    no_progress: bool = option("--no-progress", default=False, help="no progress bars")


ASSET_SUBSETS = ("demo", "all")  # assets.lock.json: the files the demo reads, or every file


@dataclass(kw_only=True)
class AssetOptions:
    """Options of ``speedbench assets fetch`` / ``assets env``, declared once (``speedbench.options``)."""

    only: str = option("--only", default="all", choices=ASSET_SUBSETS,
                       help="demo: the files `speedbench demo` reads; all: every file of the lock")
    out: Path | None = option("--out", default=None, parse=Path, metavar="DIR", show_default=False,
                              help="the shared layout to write (default: $SPEEDBENCH_CACHE/assets, "
                                   "else ~/.cache/speedbench/assets)")
    lock: Path | None = option("--lock", default=None, parse=Path, metavar="FILE", show_default=False,
                               help="the lock file (default: assets.lock.json of this repository)")
    workers: int = option("--workers", default=4, parse=int, help="files downloaded at a time")
    no_progress: bool = reuse(SharedOptions, "no_progress", help="no progress bar")


@dataclass(frozen=True)
class BuildOptions:
    """Options of `speedbench build`, with their defaults (the one home of both).

    ``BuildContext`` keeps the mapping it was given (it is recorded in ``manifest.json`` as is)
    and exposes this typed view; a key that is not a field here is an error.
    """

    per_tier: int = 512                  # rows per entropy tier of each throughput bucket
    per_category: int = 80               # rows per qualitative category
    allow_short: bool = False            # write a config whose pool is short instead of failing
    selector: str = "greedy_swap"        # qualitative subset selection (Algorithm 1)
    embedder: str = "use"                # sentence embeddings for the selection
    pool_cap: int = 0                    # candidates embedded per category (0: every candidate)
    embed_workers: int | None = None     # embedding processes (None: one per core, at most 4)
    embedding_url: str | None = None     # --embedder openai: base URL of the embeddings endpoint
    embedding_model: str | None = None   # --embedder openai: the embedding model
    dedup_threshold: float = 0.95        # cosine similarity above which candidates are duplicates
    online: bool = False                 # fetch Hub sources instead of reading the mirror
    placeholders: bool = False           # export non-redistributable rows as placeholders
    hub_revisions: str | dict | None = None   # JSON file (or dict) of pinned Hub revisions
    embedding_cache: str | None = None   # folder of cached embeddings
    specbench_compare_cap: int = 0       # Spec-Bench prompts compared per category (0: all)
    lite_per_category: int | None = None  # lite configs: rows per stratum (None: the config's own)
    lite_per_tier: int | None = None
    lite_max_prompt_tokens: int | None = None  # lite_qualitative: drop longer parent rows
    config: str | None = None            # the config being built (recorded by `speedbench demo`)

    @classmethod
    def from_mapping(cls, options: Mapping) -> "BuildOptions":
        """Typed options from a mapping; ``None`` means "the default", unknown keys are refused."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"build options: unknown option(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(known)}")
        values = {}
        for name, value in options.items():
            if value is None:
                continue
            expected = _OPTIONAL_TYPES.get(name) or type(known[name].default)
            if expected is bool and not isinstance(value, bool):
                raise ValueError(f"build options: {name} must be true or false, got {value!r}")
            if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"build options: {name} must be an integer, got {value!r}")
            if expected is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"build options: {name} must be a number, got {value!r}")
            if expected is str and not isinstance(value, str):
                raise ValueError(f"build options: {name} must be a string, got {value!r}")
            values[name] = float(value) if expected is float else value
        return cls(**values)


# The types of the options whose default is None (hub_revisions: a path or a dict, unchecked).
_OPTIONAL_TYPES = {"embedding_cache": str, "embed_workers": int, "embedding_url": str, "embedding_model": str, "lite_per_category": int, "lite_per_tier": int,
                   "lite_max_prompt_tokens": int, "config": str, "hub_revisions": object}

BUILD_DEFAULTS = BuildOptions()

# Subset selectors (Algorithm 1 and its baselines) and sentence embedders the builders offer.
SELECTORS = ("greedy_swap", "greedy", "qp", "random")
EMBEDDERS = ("use", "openai")


@dataclass(kw_only=True)
class QualitativeOptions:
    """How a qualitative category's prompts are embedded, deduplicated and chosen: the options
    ``speedbench build`` and ``speedbench curate`` share, declared once (``speedbench.options``);
    each command adds the ones it takes with ``add_arguments(parser, QualitativeOptions, only=...)``.
    The defaults are ``BuildOptions``'."""

    selector: str = option("--selector", default=BUILD_DEFAULTS.selector, choices=SELECTORS,
                           help="how the prompts of each category are chosen")
    embedder: str = option("--embedder", default=BUILD_DEFAULTS.embedder, choices=EMBEDDERS, help=(
        "'use': the multilingual Universal Sentence Encoder (offline); 'openai': any OpenAI-compatible "
        "/v1/embeddings endpoint (key from OPENAI_API_KEY when set)"))
    embedding_cache: Path | None = option("--embedding-cache", default=None, parse=Path, help=(
        "embedding cache folder; default: $SPEEDBENCH_CACHE/embeddings or ~/.cache/speedbench/embeddings"))
    pool_cap: int = option("--pool-cap", default=BUILD_DEFAULTS.pool_cap, parse=int, help=(
        "qualitative: at most this many candidates per category are embedded (a seeded sample balanced "
        "across sources; 0 = every candidate, the default)"))
    embedding_url: str | None = option("--embedding-url", default=None, help=(
        "with --embedder openai: base URL of any OpenAI-compatible embeddings endpoint (vLLM, TEI, ...; "
        "default $OPENAI_BASE_URL or OpenAI's); key from OPENAI_API_KEY when set"))
    embedding_model: str | None = option("--embedding-model", default=None, help=(
        "with --embedder openai: the embedding model (default text-embedding-3-large)"))
    embed_workers: int | None = option("--embed-workers", default=None, parse=int, help=(
        "qualitative, --embedder use: embedding processes, one BLAS thread each (default: "
        "$SPEEDBENCH_EMBED_WORKERS or one per CPU core, at most 4); the vectors do not depend on it"))
    dedup_threshold: float = option("--dedup-threshold", default=BUILD_DEFAULTS.dedup_threshold, parse=float,
                                    help="drop prompts whose cosine similarity to an earlier one is at least "
                                         "this (FAISS); 1 disables")


# -- environment variables -------------------------------------------------------------------
# Every variable the project reads is read here, by a named accessor, at call time (tests and
# `speedbench demo` set them while running). An empty value counts as unset; a value that does not
# parse is an error naming the variable. Variables only passed through to child processes (the
# engines' own, PATH) and the ${NAME} references of a sweep plan are not settings and not here.
def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


MODELS_ENV = "SPEEDBENCH_MODELS"  # the local models folder (serve, the demo, the sweep plans)


def _env_path(name: str) -> Path | None:
    value = _env(name)
    return Path(value) if value else None


def env_number(name: str, default: float, kind: type = float) -> float:
    """``name`` as a number of ``kind`` (int or float), ``default`` when unset."""
    value = _env(name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r}: expected {'an integer' if kind is int else 'a number'}") from None


def sources_dir() -> Path | None:
    """``SPEEDBENCH_SOURCES``: the local mirror of the public source datasets (``--sources``' default)."""
    return _env_path("SPEEDBENCH_SOURCES")


def models_dir() -> Path | None:
    """``SPEEDBENCH_MODELS``: the folder of the local models `speedbench serve` / the demo start."""
    return _env_path(MODELS_ENV)


def vllm_venv_dir() -> Path | None:
    """``SPEEDBENCH_VLLM_VENV``: the virtual environment vLLM runs from (default: ``.venv-vllm``)."""
    return _env_path("SPEEDBENCH_VLLM_VENV")


def sglang_venv_dir() -> Path | None:
    """``SPEEDBENCH_SGLANG_VENV``: the virtual environment SGLang runs from (default: ``.venv-sglang``)."""
    return _env_path("SPEEDBENCH_SGLANG_VENV")


def cache_dir() -> Path | None:
    """``SPEEDBENCH_CACHE``: the cache root (embeddings; default ``~/.cache/speedbench``)."""
    return _env_path("SPEEDBENCH_CACHE")


def shared_dir() -> Path:
    """``SPEEDBENCH_SHARED``: the shared folder (``sources/``, ``models/stories260K/``) looked at
    first for the assets; default ``../shared`` beside the repository (the Makefile passes its own)."""
    return _env_path("SPEEDBENCH_SHARED") or Path(__file__).resolve().parents[2] / "shared"


def assets_dir() -> Path:
    """Where ``speedbench assets fetch`` writes the shared layout by default: ``<cache root>/assets``."""
    return (cache_dir() or Path.home() / ".cache" / "speedbench") / "assets"


def assets_mirror_url() -> str | None:
    """``SPEEDBENCH_ASSETS_MIRROR_URL``: replaces the scheme and host of every URL of assets.lock.json."""
    return _env("SPEEDBENCH_ASSETS_MIRROR_URL")


def embed_workers() -> int | None:
    """``SPEEDBENCH_EMBED_WORKERS``: embedding processes (default: one per core, at most 4)."""
    return None if _env("SPEEDBENCH_EMBED_WORKERS") is None else env_number("SPEEDBENCH_EMBED_WORKERS", 0, int)


def worker_start_method() -> str | None:
    """``SPEEDBENCH_WORKER_START``: how `speedbench run --workers` starts processes (fork, spawn, ...)."""
    return _env("SPEEDBENCH_WORKER_START")


def hub_endpoint() -> str | None:
    """``HF_ENDPOINT``: the Hugging Face Hub to talk to (None: huggingface_hub's default)."""
    return _env("HF_ENDPOINT")


def hf_token() -> str | None:
    """``HF_TOKEN``: the Hub token for writes and gated repositories."""
    return _env("HF_TOKEN")


def openai_base_url() -> str | None:
    """``OPENAI_BASE_URL``: the embeddings endpoint of ``--embedder openai``."""
    return _env("OPENAI_BASE_URL")


def openai_api_key() -> str | None:
    """``OPENAI_API_KEY``: its key."""
    return _env("OPENAI_API_KEY")


def hub_mirror_repo() -> str | None:
    """``SPEEDBENCH_HUB_MIRROR``: the private Hub dataset the leaderboard mirrors its store to."""
    return _env("SPEEDBENCH_HUB_MIRROR")


def known_builds_paths() -> list[str]:
    """``SPEEDBENCH_KNOWN_BUILDS``: extra known-build descriptors (files or folders, ``os.pathsep``-separated)."""
    return [p for p in (_env("SPEEDBENCH_KNOWN_BUILDS") or "").split(os.pathsep) if p]


def leaderboard_db() -> Path | None:
    """``SPEEDBENCH_DB``: the leaderboard's SQLite database."""
    return _env_path("SPEEDBENCH_DB")


# The leaderboard's resource limits, each overridable by its variable (``env_number``).
LEADERBOARD_LIMIT_VARIABLES = ("SPEEDBENCH_MAX_BUNDLE_MB", "SPEEDBENCH_MAX_UNPACKED_MB", "SPEEDBENCH_MAX_VALIDATIONS",
                               "SPEEDBENCH_VALIDATION_MEMORY_MB", "SPEEDBENCH_VALIDATION_CPU_S",
                               "SPEEDBENCH_RSS_LIMIT_MB", "SPEEDBENCH_UPLOAD_MAX_AGE_S", "SPEEDBENCH_BODY_TIMEOUT_S",
                               "SPEEDBENCH_MAX_CONNECTIONS", "SPEEDBENCH_SEARCH_MAX_CHARS",
                               "SPEEDBENCH_UPLOADS_PER_HOUR", "SPEEDBENCH_HEADER_TIMEOUT_S",
                               "SPEEDBENCH_MAX_OPEN_CONNECTIONS", "SPEEDBENCH_MAX_REQUEST_KB")


def leaderboard_limit(name: str, default: float, kind: type = float) -> float:
    """One of ``LEADERBOARD_LIMIT_VARIABLES``, ``default`` when unset."""
    if name not in LEADERBOARD_LIMIT_VARIABLES:
        raise KeyError(f"{name} is not a leaderboard limit ({', '.join(LEADERBOARD_LIMIT_VARIABLES)})")
    return env_number(name, default, kind)


def take_sweep_parent_pid() -> int:
    """``SPEEDBENCH_SWEEP_PID``: the sweep that started this server (0: none); removed once read, so
    the server's own children do not inherit it."""
    value = os.environ.pop("SPEEDBENCH_SWEEP_PID", "").strip()
    return int(value) if value else 0


def ray_auth_mode() -> str | None:
    """``RAY_AUTH_MODE``: Ray's authentication mode for this process (``token`` or ``disabled``);
    Ray reads it itself, `speedbench run --ray` only to explain a refused connection."""
    return _env("RAY_AUTH_MODE")


def ray_auth_token_source() -> str | None:
    """Where Ray would take this process's token from (a name, never the token): ``RAY_AUTH_TOKEN``,
    ``RAY_AUTH_TOKEN_PATH=<file>`` or ``~/.ray/auth_token`` in Ray's order; None when there is none."""
    if _env("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if _env("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH={_env('RAY_AUTH_TOKEN_PATH')}"
    return "~/.ray/auth_token" if (Path.home() / ".ray" / "auth_token").is_file() else None


def gradio_server() -> tuple[str, int]:
    """``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``: where the leaderboard Space listens."""
    return _env("GRADIO_SERVER_NAME") or "127.0.0.1", int(env_number("GRADIO_SERVER_PORT", 7860, int))


def gradio_temp_dir() -> Path | None:
    """``GRADIO_TEMP_DIR``: where Gradio keeps uploads."""
    return _env_path("GRADIO_TEMP_DIR")
