"""Engine adapters: one module per serving engine, each building the request and parsing the stream.

``get_adapter(name)`` returns the adapter class; the names are those of ``speedbench run --engine``.
"""
from __future__ import annotations

from speedbench import settings
from speedbench.client.engines.base import EngineAdapter, SamplingOptions, StreamError, StreamState


def get_adapter(name: str) -> type[EngineAdapter]:
    from speedbench.client.engines.llamacpp import LlamaCppAdapter
    from speedbench.client.engines.openai import OpenAIAdapter
    from speedbench.client.engines.sglang import SGLangAdapter
    from speedbench.client.engines.trtllm import TrtLlmAdapter
    from speedbench.client.engines.vllm import VllmAdapter

    adapters = {a.name: a for a in (VllmAdapter, SGLangAdapter, TrtLlmAdapter, LlamaCppAdapter, OpenAIAdapter)}
    if name not in adapters:
        raise ValueError(f"unknown engine {name!r}; expected one of {', '.join(sorted(adapters))}")
    return adapters[name]


ENGINE_NAMES = settings.ENGINE_NAMES  # defined once, in speedbench.settings

__all__ = ["ENGINE_NAMES", "EngineAdapter", "SamplingOptions", "StreamError", "StreamState", "get_adapter"]
