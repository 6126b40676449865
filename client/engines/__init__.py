"""Engine adapters: one module per serving engine, each building the request and parsing the stream.

``get_adapter(name)`` returns the adapter class; the names are those of ``speedbench run --engine``.
"""
from __future__ import annotations

from importlib import import_module

from speedbench import engines, settings
from speedbench.client.engines.base import EngineAdapter, SamplingOptions, StreamError, StreamState


def get_adapter(name: str) -> type[EngineAdapter]:
    """The adapter class the engine's spec names (``speedbench.engines``; ValueError for an unknown name)."""
    module, _, cls = engines.get(name).adapter.partition(":")
    return getattr(import_module(module), cls)


ENGINE_NAMES = settings.ENGINE_NAMES  # defined once, in speedbench.settings

__all__ = ["ENGINE_NAMES", "EngineAdapter", "SamplingOptions", "StreamError", "StreamState", "get_adapter"]
