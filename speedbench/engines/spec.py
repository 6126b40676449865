"""What an engine is, as data: its name, the request adapter the client uses, the statistics and
counters it reports and how to read them, whether this machine can serve it.

One spec per engine, one module each (``speedbench/engines/<name>.py``), found through the
registry in ``speedbench.engines``. Rules that depend on the engine are properties here, never a
test of its name elsewhere. Standard library only: the core's lowest layer (beside settings).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CounterNames:
    """An engine's Prometheus counters for speculative decoding (``speedbench.metrics.acceptance.counter_sources``)."""

    source: str
    marker: str  # present in the delta when the engine exposes speculative counters
    drafts: str | None = None
    draft_tokens: str | None = None
    accepted_tokens: str | None = None
    verify_steps: str | None = None
    generation_tokens: str | None = None
    per_position: bool = False


@dataclass(frozen=True)
class LocalLauncher:
    """How ``speedbench serve`` (:class:`speedbench.engine.local.LocalEngine`) starts an engine here.

    label: the server as error messages name it; banner: how ``speedbench serve`` names it before
    its version; server: the run manifest's ``server``; startup_timeout_s / stop_timeout_s: how
    long it may take to come up (the default of ``EngineConfig.startup_timeout_s``) and to stop;
    speculation_modes: the ``--speculation`` modes it serves (empty: every mode ``EngineConfig``
    knows); hf_models: it serves Hugging Face folders converted from the llama2.c checkpoint
    (``speedbench.engine.hf_llama``) rather than GGUF files; supervised: the module that runs it
    under its own venv's Python through ``vllm_process.py`` (it has ``python()`` and
    ``serve_request(config, work_dir)``), None for the llama.cpp child in our own Python;
    version_route: the route where the running server reports its ``version``; health_says_ok:
    ``/health`` answers ``{"status": "ok"}`` when ready (else any 200); replays_profiles: its
    ``synthetic`` mode serves a speculation profile's rates (``serve --synthetic-from``).
    """

    label: str
    banner: str
    server: str
    startup_timeout_s: float
    stop_timeout_s: float
    speculation_modes: tuple[str, ...] = ()
    hf_models: bool = False
    supervised: str | None = None
    version_route: str | None = None
    health_says_ok: bool = False
    replays_profiles: bool = False


@dataclass(frozen=True)
class ScheduleForm:
    """How an engine takes a draft-length schedule (batch-size ranges -> K, ``speedbench schedule``).

    writer: ``"module:function"`` of ``(DraftSchedule, max_k) -> dict`` giving the engine's keys (resolved
    when used, so the specs import nothing); key: the key among them whose value is the schedule itself
    (what a sweep writes for ``{schedule}``); as_file: the engine reads that value from a file."""

    writer: str
    key: str
    as_file: bool = False


@dataclass(frozen=True)
class EngineSpec:
    """One engine.

    name: the ``--engine`` name, also the prefix of its statistics' ``source`` (``"vllm.metrics"``);
    adapter: ``"module:Class"`` of its request adapter (resolved by the client only, so the core
    never imports the client); stats_source: the ``source`` its per-request statistics carry;
    counters: its Prometheus counter names (None: it exposes none we read); source_flags: the server
    flag each acceptance source needs ("engine", "counters"), which ``speedbench run`` warns about;
    verify_steps_are_decode_steps: its statistics' ``verify_steps`` count every decode step (not
    only the drafted ones); chunks_are_engine_steps: its stream says which step each chunk is, so
    a chunk is one step, never merged; drafts_fit_the_budget: each step drafts ``min(K, B - 1)`` tokens,
    ``B`` the tokens the request may still emit, so the per-step drafted counts follow from its stream
    (:func:`speedbench.metrics.acceptance.steps.budget_per_step_arrays`); local: ``speedbench serve`` can start it on this machine;
    standin: the tests reproduce it with a stand-in server; aliases: other names ``serve`` accepts;
    schedule_form: how it takes a draft-length schedule (:class:`ScheduleForm`; None: it takes none);
    launcher: how ``speedbench serve`` starts it (:class:`LocalLauncher`; None: not served here);
    peer_view: the ``NAME`` of the view in ``speedbench.peers`` that is this engine's own benchmark
    tool (the figures only it can give, such as vLLM's counters, need records of this engine).
    """

    name: str
    label: str
    adapter: str
    stats_source: str | None = None
    counters: CounterNames | None = None
    source_flags: dict[str, str] = field(default_factory=dict)
    verify_steps_are_decode_steps: bool = False
    chunks_are_engine_steps: bool = False
    drafts_fit_the_budget: bool = False
    local: bool = False
    standin: bool = False
    aliases: tuple[str, ...] = ()
    launcher: LocalLauncher | None = None
    schedule_form: ScheduleForm | None = None
    peer_view: str | None = None
