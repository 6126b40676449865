"""Names and defaults that several modules share, defined once.

Only the standard library is imported here, so the CLI can read defaults for ``--help``
without loading the heavy modules that use them. The core, the client, the dataset builder
and the leaderboard all read these; none of them spells a value out again.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from speedbench.options import option

# Engines the client speaks to (one adapter each) and the leaderboard accepts.
ENGINE_NAMES = ("vllm", "sglang", "trtllm", "llamacpp", "openai")
# Engines `speedbench serve` / LocalEngine can start on this machine.
LOCAL_ENGINES = ("llamacpp", "vllm", "sglang")
# Engines reproduced by the stand-in servers of the tests (they need GPUs, or did).
STANDIN_ENGINES = ("vllm", "sglang", "trtllm")

# A run stops after this many failed requests (a misconfigured server should not be hammered).
MAX_ERRORS = 20
# Seconds one request may take in all: long outputs at high concurrency take many minutes.
REQUEST_TIMEOUT_S = 3600.0
# Seconds without a byte from the server before a request is given up (a stalled stream).
READ_TIMEOUT_S = 300.0

# Relative difference between two acceptance sources' acceptance length above which results, the
# report and the board flag the disagreement (``speedbench run/report --tolerance``).
AGREEMENT_TOLERANCE = 0.02
# Bootstrap resamples behind every 95% confidence interval (seeded, so the same records give the
# same interval; ``--resamples``).
NUM_RESAMPLES = 1000


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
