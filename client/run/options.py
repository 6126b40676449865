"""``RunOptions``: everything ``speedbench run`` accepts, as one typed value (recorded in the manifest)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from speedbench.client.engines.base import SamplingOptions
from speedbench.settings import MAX_ERRORS, READ_TIMEOUT_S, REQUEST_TIMEOUT_S

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# Manifest options that must match for a resume (others, like --workers, may change).
RESUME_KEYS = ("engine", "url", "dataset_config", "dataset_config_sha256", "tokenizer_sha256", "prompt_mode")
RESUME_OPTIONS = ("sampling", "limit", "load_shape", "points", "warmup", "extra_body", "model")


class RunConfigError(ValueError):
    pass


@dataclass
class RunOptions:
    """Everything ``speedbench run`` accepts (recorded in the manifest)."""

    engine: str
    url: str
    tokenizer: str
    dataset: str
    config: str
    out: str
    limit: int | None = None
    concurrency: list[int] = field(default_factory=lambda: list(DEFAULT_CONCURRENCY))
    request_rates: list[float] | None = None  # open loop instead of closed loop when set
    arrival_seed: int = 0
    sampling: SamplingOptions = field(default_factory=SamplingOptions)
    prompt_mode: str = "chat"
    model: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    ray: str | None = None  # a Ray cluster's address: the workers run there as actors (execution.ray_pool)
    warmup: int = 0  # requests per load point run first and excluded from results
    max_errors: int = MAX_ERRORS
    request_timeout_s: float | None = REQUEST_TIMEOUT_S
    read_timeout_s: float | None = READ_TIMEOUT_S
    draft_length: int | None = None  # K for chunk-based acceptance when the engine does not say
    agreement_tolerance: float = 0.02
    num_resamples: int = 1000
    progress: bool = True
    online: bool = False  # a Hub dataset id may be fetched (else only the datasets cache is read)

    @property
    def load_shape(self) -> str:
        return "open" if self.request_rates else "closed"

    def points(self) -> list[tuple[str, int | None, float | None]]:
        if self.request_rates:
            return [(f"r{rate:g}", None, float(rate)) for rate in self.request_rates]
        return [(f"c{c}", int(c), None) for c in self.concurrency]

    def manifest_options(self) -> dict[str, Any]:
        return {
            "sampling": asdict(self.sampling), "limit": self.limit, "load_shape": self.load_shape,
            "points": [p[0] for p in self.points()], "concurrency": list(self.concurrency),
            "request_rates": self.request_rates, "arrival_seed": self.arrival_seed, "warmup": self.warmup,
            "workers": self.workers, "ray": self.ray, "max_errors": self.max_errors,
            "request_timeout_s": self.request_timeout_s,
            "read_timeout_s": self.read_timeout_s, "extra_body": self.extra_body, "model": self.model,
            "agreement_tolerance": self.agreement_tolerance, "draft_length": self.draft_length, "num_resamples": self.num_resamples,
        }
