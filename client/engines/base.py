"""What every engine adapter does: build one request from token ids, read one streamed event.

An adapter knows an engine's wire format (``docs/engine-wire-formats.md``) and
nothing about timing or load: the stream loop (``speedbench.client.execution.stream``) stamps events,
the load shapes decide when to send. Adapters are cheap objects built once per run; per-request
state lives in a ``StreamState``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speedbench.metrics.acceptance.counter_sources import CounterAcceptance, counter_acceptance
from speedbench.options import option
from speedbench.records import EngineSpecStats

REQUESTS = "requests"  # the --help group of the options every request carries


@dataclass
class SamplingOptions:
    """Generation options sent with every request.

    Defaults follow the paper's main setting: greedy decoding (temperature 0; Table 1 also
    reports temperature 1), outputs long enough for SD statistics (the paper's prompts average
    about 650 output tokens on the Qualitative split and 2.4k at 16k ISL; 4096 leaves room, and
    requests that hit the cap are counted in the results), natural stopping at EOS
    (``ignore_eos`` False; turn it on for throughput runs that need fixed output lengths), and a
    fixed seed so that sampled runs can be repeated. Each field is also a flag of ``speedbench run``
    (``speedbench.options``).
    """

    max_tokens: int = option("--max-tokens", default=4096, parse=int, group=REQUESTS,
                             help="output tokens per request")
    temperature: float = option("--temperature", default=0.0, parse=float, group=REQUESTS,
                                help="sampling temperature; 0 is greedy")
    ignore_eos: bool = option("--ignore-eos", default=False, group=REQUESTS,
                              help="generate exactly --max-tokens tokens")
    seed: int | None = option("--seed", default=0, parse=int, group=REQUESTS, help="sampling seed sent to the engine")
    # llama.cpp's synthetic acceptance draws from the request's seed: one seed for every request
    # replays one random stream in each (docs/profile.md), so a replay needs a seed per prompt.
    seed_per_prompt: bool = option("--seed-per-prompt", default=False, group=REQUESTS,
                                   help="send --seed plus a number derived from the prompt's token ids, so that "
                                        "each prompt draws its own random stream (reproducibly)")
    top_p: float | None = option("--top-p", default=None, parse=float, group=REQUESTS,
                                 help="top-p sent to the engine (unset: not sent)")


def request_seed(sampling: SamplingOptions, prompt_ids: list[int]) -> int | None:
    """The seed sent with one request: ``--seed``, or with ``--seed-per-prompt`` ``--seed`` plus the
    first 4 bytes of the sha256 of the prompt's ids, modulo 2^31 (reproducible, distinct per prompt)."""
    if sampling.seed is None or not sampling.seed_per_prompt:
        return sampling.seed
    import hashlib

    digest = hashlib.sha256(",".join(map(str, prompt_ids)).encode()).digest()
    return (sampling.seed + int.from_bytes(digest[:4], "big")) % 2**31


class StreamError(Exception):
    """A request that failed; ``kind`` names the cause for the error record."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class StreamState:
    """What one request has accumulated so far."""

    tokens_total: int = 0
    text: str = ""
    finish_reason: str | None = None
    response_id: str | None = None
    usage: dict[str, Any] | None = None
    last_event: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The generated token ids the engine streamed, in order (None: it sent none). Kept only when
    # they add up to the tokens counted (``stream_request``); a mismatch discards them.
    token_ids: list[int] | None = None
    token_ids_broken: bool = False

    def add_token_ids(self, ids: Any) -> None:
        """Append one event's new ids (a non-list marks the ids unusable instead of failing the
        request; the elements are checked once, at the end, by ``stream.engine_token_ids``)."""
        if type(ids) is not list:
            self.token_ids_broken = True
            return
        if self.token_ids is None:
            self.token_ids = []
        self.token_ids.extend(ids)


class EngineAdapter:
    """Base class; subclasses set the class attributes and override the hooks."""

    name = "base"
    generate_path = "/v1/completions"
    metrics_path: str | None = "/metrics"
    # Whether a clean stream ends with ``data: [DONE]`` (an EOF before it is a dropped connection).
    stream_ends_with_done = True
    # Whether the adapter merges one step's events into one chunk (``step_key``).
    chunks_are_steps = True
    # Route of exact per-request statistics fetched after a load point (TensorRT-LLM), or None.
    perf_metrics_path: str | None = None
    # K when the engine's statistics do not carry it (SGLang: from the server info).
    draft_length: int | None = None
    # A route answering {"version": ...} (vLLM, TensorRT-LLM): the server description names the
    # engine's version as "<version_label> <version>".
    version_route: str | None = None
    version_label: str | None = None
    # The routes a user can choose (``--api``): "native" is the engine's own; SGLang adds "openai".
    apis: tuple[str, ...] = ("native",)

    def __init__(self, url: str, sampling: SamplingOptions | None = None, model: str | None = None,
                 extra_body: dict[str, Any] | None = None, api: str = "native"):
        if api not in self.apis:
            raise ValueError(f"--api {api}: the {self.name} adapter offers {', '.join(self.apis)}")
        self.api = api
        self.url = url.rstrip("/")
        self.sampling = sampling or SamplingOptions()
        self.model = model
        self.extra_body = dict(extra_body or {})

    # -- request ----------------------------------------------------------------------------
    def check_options(self) -> None:
        """Raise ``ValueError`` for options the engine would reject (called once, before a run)."""

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def generate_url(self) -> str:
        return self.url + self.generate_path

    # -- stream -----------------------------------------------------------------------------
    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        """Update ``state`` from one decoded SSE event; return (new tokens, step key or None).

        Consecutive events with the same non-None step key belong to one verification step.
        Raise ``StreamError("malformed", ...)`` for an event that does not fit the format.
        """
        raise NotImplementedError

    def stream_finished(self, state: StreamState) -> bool:
        """Whether a stream that ended without ``[DONE]`` is complete (else: a dropped connection)."""
        return not self.stream_ends_with_done

    def engine_stats(self, state: StreamState) -> EngineSpecStats | None:
        return None

    # -- server ----------------------------------------------------------------------------
    async def describe_server(self, session) -> dict[str, Any]:
        """Model id and engine version as the server reports them (best effort)."""
        info: dict[str, Any] = {"model_id": None, "engine_version": None}
        models = await get_json(session, self.url + "/v1/models")
        if models and models.get("data"):
            info["model_id"] = models["data"][0].get("id")
        if self.version_route:
            version = await get_json(session, self.url + self.version_route)
            if version and version.get("version"):
                info["engine_version"] = f"{self.version_label or self.name} {version['version']}"
        return info

    def request_stats_by_id(self, entries: Any) -> dict[str, dict[str, Any]]:
        """Separately served per-request statistics keyed by response id (``perf_metrics_path``)."""
        return {}

    def stats_from_request_entry(self, entry: dict[str, Any], output_tokens: int, draft_length: int | None,
                                 chunk_steps: int = 0) -> EngineSpecStats | None:
        return None

    def counter_acceptance(self, delta: dict[str, float], per_position: dict[int, float]) -> CounterAcceptance | None:
        """Acceptance from counter deltas (``delta`` summed over labels except ``position``); the
        counter names per engine live in ``speedbench.metrics.acceptance.counter_sources``."""
        return counter_acceptance(self.name, delta, per_position)


async def get_json(session, url: str) -> Any:
    """GET a JSON document; None when the route is absent or unreadable (describing is best effort)."""
    import aiohttp

    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as response:
            if response.status != 200:
                return None
            return await response.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None


def require(event: dict[str, Any], key: str, engine: str) -> Any:
    if key not in event:
        raise StreamError("malformed", f"{engine} event without {key!r}: {str(event)[:200]}")
    return event[key]


def usage_delta(event: dict[str, Any], state: StreamState) -> int | None:
    """New tokens from cumulative ``usage.completion_tokens`` (continuous usage stats)."""
    usage = event.get("usage")
    if not usage or usage.get("completion_tokens") is None:
        return None
    state.usage = usage
    new = int(usage["completion_tokens"]) - state.tokens_total
    if new < 0:
        raise StreamError("malformed", f"usage.completion_tokens went backwards: {usage}")
    return new
