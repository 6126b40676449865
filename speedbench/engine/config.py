"""What to serve: the target model, how it speculates, and where the models live.

``EngineConfig`` is a plain dataclass so that it can be written into a run's manifest
(``asdict``) and sent to the server's child process as JSON.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from speedbench import engines, settings
from speedbench.engines.spec import LocalLauncher
from speedbench.settings import LOCAL_ENGINES, MODELS_ENV

DEFAULT_TARGET = "stories260K-ctx16k-f32.gguf"
DEFAULT_DRAFT = "stories260K-ctx16k-draft-q4_0.gguf"
# vLLM serves Hugging Face folders: the llama2.c checkpoint, converted (speedbench.engine.hf_llama).
DEFAULT_VLLM_TARGET = "stories260K.bin"
ENGINES = LOCAL_ENGINES  # how each one starts, and what it serves: its spec's launcher (speedbench.engines)

# "ngram" is an alias of llama.cpp's simplest n-gram speculator; the other n-gram variants
# are reachable by their llama.cpp names (``--spec-type``).
NGRAM_KINDS = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
SPECULATION_MODES = ("none", "draft", "synthetic", "ngram") + NGRAM_KINDS


def default_models_dir() -> Path:
    """``$SPEEDBENCH_MODELS``, else ``models/stories260K`` of the shared folder (``settings.shared_dir``)."""
    env = settings.models_dir()
    if env:
        return env
    return settings.shared_dir() / "models" / "stories260K"


def _resolve_model(path: str | os.PathLike | None, default_name: str) -> Path:
    if path is None:
        return default_models_dir() / default_name
    path = Path(path)
    # A bare file name is looked up in the models folder, so `--draft stories260K-draft-q8_0.gguf` works.
    if not path.is_absolute() and not path.exists() and len(path.parts) == 1:
        return default_models_dir() / path
    return path


@dataclass
class EngineConfig:
    """How to start a local server: llama.cpp (xllamacpp, the default), vLLM or SGLang.

    speculation:
      ``none``       plain autoregressive decoding (the baseline);
      ``draft``      a separate draft model (``draft``) proposes ``draft_length`` tokens per step;
      ``synthetic``  the draft model runs, but acceptance is replaced by synthetic per-position
                     rates (``synthetic_rates``, unconditional, non-increasing, one per position)
                     or a target mean acceptance length (``synthetic_length``); output text is
                     not valid, the load pattern is (for throughput tests at a chosen AL);
      ``ngram`` / ``ngram-*``  model-free n-gram speculation over the context.
    n_ctx is the KV-cache size over all slots; ``None`` gives ``n_ctx_per_slot * n_parallel``.
    port 0 lets the operating system pick a free port (the URL tells which).

    vLLM (``speedbench.engine.vllm``): ``target``/``draft`` are llama2.c checkpoints (converted to
    Hugging Face folders in ``work_dir``) or Hugging Face folders; speculation ``none``, ``ngram``
    or ``draft`` (default draft: the target rounded like Q4_0); ``n_parallel`` is
    ``--max-num-seqs``; ``work_dir`` holds converted models and every cache (a temporary folder,
    removed at stop, when ``None``).

    SGLang (``speedbench.engine.sglang``): the same models and ``work_dir`` as vLLM; speculation
    ``none``, ``ngram``, ``draft`` (a chain of ``draft_length``) or ``draft-tree`` (a tree of
    depth ``draft_length``); ``n_parallel`` is ``--max-running-requests``.
    """

    target: str | None = None
    engine: str = "llamacpp"
    draft: str | None = None
    speculation: str = "draft"
    draft_length: int = 4
    draft_min: int = 0
    # vLLM: batch-size ranges -> K (``speedbench.engine.draft_schedule``, e.g. "1-1:4,2-64:1"), each K <= draft_length
    draft_schedule: str | None = None
    # llama.cpp: stop a draft early once the draft model's top probability falls below this (--draft-p-min)
    draft_p_min: float | None = None
    synthetic_rates: list[float] | None = None
    synthetic_length: float | None = None
    n_parallel: int = 4
    n_ctx: int | None = None
    n_ctx_per_slot: int = 2048
    n_threads: int = 1
    port: int = 0
    host: str = "127.0.0.1"
    startup_timeout_s: float | None = None  # None: the engine launcher's startup_timeout_s
    max_model_len: int = 4096  # vLLM and SGLang
    kv_cache_gib: int = 1  # vLLM only (VLLM_CPU_KVCACHE_SPACE)
    work_dir: str | None = None  # vLLM and SGLang
    extra: dict[str, Any] = field(default_factory=dict)  # recorded as-is (notes for the manifest)

    def __post_init__(self) -> None:
        self.engine = engines.canonical(self.engine)
        if self.engine not in ENGINES:
            raise ValueError(f"EngineConfig.engine: unknown engine {self.engine!r}; expected one of {', '.join(ENGINES)}")
        modes = self.launcher.speculation_modes
        if modes and self.speculation not in modes:
            raise ValueError(f"EngineConfig.speculation: {self.speculation!r} is not available with "
                             f"{engines.get(self.engine).label}; "
                             f"expected one of {', '.join(modes)}")
        if not modes and self.speculation not in SPECULATION_MODES:
            raise ValueError(
                f"EngineConfig.speculation: unknown mode {self.speculation!r}; "
                f"expected one of {', '.join(SPECULATION_MODES)}"
            )
        if self.speculation != "none" and self.draft_length < 1:
            raise ValueError(f"EngineConfig.draft_length must be >= 1 with speculation, got {self.draft_length}")
        if self.n_parallel < 1:
            raise ValueError(f"EngineConfig.n_parallel must be >= 1, got {self.n_parallel}")
        if self.speculation == "synthetic":
            if (self.synthetic_rates is None) == (self.synthetic_length is None):
                raise ValueError("EngineConfig: synthetic speculation needs exactly one of "
                                 "synthetic_rates (one per draft position) or synthetic_length")
            if self.synthetic_rates is not None:
                rates = [float(r) for r in self.synthetic_rates]
                if len(rates) != self.draft_length:
                    raise ValueError(f"EngineConfig.synthetic_rates: need {self.draft_length} values "
                                     f"(one per draft position), got {len(rates)}")
                if any(not 0.0 <= r <= 1.0 for r in rates) or any(b > a for a, b in zip(rates, rates[1:])):
                    raise ValueError(f"EngineConfig.synthetic_rates must lie in [0, 1] and not increase "
                                     f"with position, got {rates}")
                self.synthetic_rates = rates
            elif not 1.0 <= float(self.synthetic_length) <= self.draft_length + 1:
                raise ValueError(f"EngineConfig.synthetic_length must lie in [1, K+1] = [1, {self.draft_length + 1}], "
                                 f"got {self.synthetic_length}")
        self._check_variable_depth()
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"EngineConfig.host: the local engine binds loopback only, got {self.host!r}")

    def _check_variable_depth(self) -> None:
        """--draft-schedule (vLLM) and --draft-p-min (llama.cpp): each with its engine and speculation."""
        if self.draft_schedule is not None:
            from speedbench.engine.draft_schedule import parse_draft_schedule

            self.draft_schedule = str(self.draft_schedule)
            if self.engine != "vllm" or self.speculation == "none":
                raise ValueError("EngineConfig.draft_schedule: a draft schedule is served by vLLM with speculation "
                                 f"(got engine {self.engine}, speculation {self.speculation}); llama.cpp shortens "
                                 "drafts with --draft-p-min")
            try:
                self.draft_schedule = parse_draft_schedule(self.draft_schedule, self.draft_length).text
            except ValueError as error:
                raise ValueError(f"EngineConfig.draft_schedule (--draft-schedule {self.draft_schedule!r}): "
                                 f"{error}") from None
        if self.draft_p_min is not None:
            if self.engine != "llamacpp" or self.speculation not in ("draft", "synthetic"):
                raise ValueError("EngineConfig.draft_p_min: --draft-p-min ends a draft model's draft early on "
                                 f"llama.cpp (got engine {self.engine}, speculation {self.speculation})")
            if not 0.0 <= float(self.draft_p_min) <= 1.0:
                raise ValueError(f"EngineConfig.draft_p_min must lie in [0, 1], got {self.draft_p_min}")
            self.draft_p_min = float(self.draft_p_min)

    @property
    def variable_depth(self) -> dict[str, Any]:
        """``engine.json``'s top-level ``draft_schedule`` / ``draft_p_min``, the keys the analysis reads to
        know that K varied (``speedbench.metrics.acceptance.draft_length.declared_variable_draft_length``)."""
        return {"draft_schedule": self.draft_schedule, "draft_p_min": self.draft_p_min}

    @property
    def launcher(self) -> LocalLauncher:
        """How this engine starts here (its spec's, ``speedbench.engines``)."""
        return engines.get(self.engine).launcher

    @property
    def uses_draft_model(self) -> bool:
        return self.speculation in ("draft", "synthetic", "draft-tree")

    @property
    def startup_timeout(self) -> float:
        return self.startup_timeout_s if self.startup_timeout_s is not None else self.launcher.startup_timeout_s

    @property
    def target_path(self) -> Path:
        return _resolve_model(self.target, DEFAULT_VLLM_TARGET if self.launcher.hf_models else DEFAULT_TARGET)

    @property
    def draft_path(self) -> Path | None:
        if self.launcher.hf_models and self.draft is None:
            return None  # vLLM's and SGLang's default draft is derived from the target (Q4_0 rounding)
        return _resolve_model(self.draft, DEFAULT_DRAFT) if self.uses_draft_model else None

    @property
    def total_ctx(self) -> int:
        return self.n_ctx if self.n_ctx is not None else self.n_ctx_per_slot * self.n_parallel

    def check_files(self) -> None:
        for role, path in (("target", self.target_path), ("draft", self.draft_path)):
            if path is not None and not (path.is_file() or (self.launcher.hf_models and path.is_dir())):
                raise FileNotFoundError(
                    f"EngineConfig.{role}: model file not found: {path} "
                    f"(set ${MODELS_ENV} or pass an explicit path)"
                )

    def to_child_json(self) -> dict[str, Any]:
        """Everything the child process needs, with paths resolved."""
        data = asdict(self)
        data["target"] = str(self.target_path)
        data["draft"] = str(self.draft_path) if self.draft_path else None
        data["n_ctx"] = self.total_ctx
        return data


def synthetic_rates_from(path: str | Path, category: str | None = None) -> list[float]:
    """The marginal rates to serve with ``speculation="synthetic"`` from a speculation profile file
    (``speedbench profile``; :func:`speedbench.metrics.profile.replay_rates`); ``ValueError`` naming
    the file and the field when it cannot be replayed."""
    import json

    from speedbench.metrics.profile import replay_rates

    path = Path(path)
    try:
        profile = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    return replay_rates(profile, str(path), category)
