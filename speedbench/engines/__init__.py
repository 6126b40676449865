"""The engines, one spec each, found through one registry.

Adding an engine: its request adapter in ``client/engines/<name>.py`` and its spec in
``speedbench/engines/<name>.py`` (``SPEC = EngineSpec(...)``), then one line in ``_MODULES`` below.
Everything that depends on the engine reads the spec: the names ``--engine`` accepts
(``speedbench.settings.ENGINE_NAMES``), the adapter (``speedbench.client.engines.get_adapter``),
its counters and the server flags each acceptance source needs
(``speedbench.metrics.acceptance.counter_sources``), how its statistics count steps
(``speedbench.metrics.acceptance.steps``, ``speedbench.analysis.consistency``), how ``speedbench serve``
starts it (``EngineSpec.launcher``: ``speedbench.engine.config`` and ``local``) and which peer view is its
own tool's (``EngineSpec.peer_view``: ``speedbench.peers``).
"""
from __future__ import annotations

from importlib import import_module

from speedbench.engines.spec import CounterNames, EngineSpec, LocalLauncher, ScheduleForm

_MODULES = ("vllm", "sglang", "trtllm", "llamacpp", "openai")  # registration order = the order names are listed

REGISTRY: dict[str, EngineSpec] = {}


def register(spec: EngineSpec) -> EngineSpec:
    if spec.name in REGISTRY:
        raise ValueError(f"engine {spec.name!r} registered twice")
    REGISTRY[spec.name] = spec
    return spec


for _name in _MODULES:
    register(import_module(f"speedbench.engines.{_name}").SPEC)


def get(name: str) -> EngineSpec:
    """The spec of ``name`` (ValueError naming the known engines otherwise)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; expected one of {', '.join(sorted(REGISTRY))}") from None


def canonical(name: str) -> str:
    """The registered name of ``name`` or of an alias of it (``"llama.cpp"`` -> ``"llamacpp"``);
    an unknown name comes back as given, for the caller's own message."""
    return next((s.name for s in REGISTRY.values() if name in s.aliases), name)


def names(**having: bool) -> tuple[str, ...]:
    """The registered names, in order; ``names(local=True)``: those whose spec has that property."""
    return tuple(n for n, s in REGISTRY.items() if all(getattr(s, k) == v for k, v in having.items()))


def names_with(attribute: str) -> tuple[str, ...]:
    """The registered names, in order, whose spec sets ``attribute`` (not None): ``names_with("schedule_form")``."""
    return tuple(n for n, s in REGISTRY.items() if getattr(s, attribute) is not None)


def of_source(source: str | None) -> EngineSpec | None:
    """The spec whose statistics carry ``source`` (``"llamacpp.timings"`` -> llama.cpp's), by its prefix."""
    return REGISTRY.get(str(source).split(".", 1)[0]) if source else None


__all__ = ["REGISTRY", "CounterNames", "EngineSpec", "LocalLauncher", "ScheduleForm", "canonical", "get", "names",
           "names_with", "of_source", "register"]
