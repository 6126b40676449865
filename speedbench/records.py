"""What a measurement run writes: one record per request-turn, and the run manifest.

These dataclasses are the contract between the client (which writes them), the report and the
leaderboard (which read them). Fields are only ever added, never renamed; readers must ignore
fields they do not know. ``RECORD_FORMAT_VERSION`` is bumped when a meaning changes.

``records.jsonl`` holds one JSON object per line, written as each request-turn completes
(``TurnRecord.to_dict``). Times are integer nanoseconds of the machine's monotonic clock
(``time.perf_counter_ns``, CLOCK_MONOTONIC on Linux: one clock for all worker processes), so
they are comparable within a run, not across machines or reboots. ``started_unix_s`` gives
the wall-clock time for humans.

Chunks: ``chunk_ns[i]`` is when chunk i arrived, ``chunk_tokens[i]`` how many new tokens it
carried (from the engine's token ids or cumulative usage, never from re-tokenized text). When
an engine streams one event per token but says which verification step a token belongs to
(llama.cpp with ``timings_per_token``), the events of one step are merged into one chunk,
stamped with the arrival of its first event; ``chunks_are_steps`` says whether the adapter
could do so (otherwise a chunk may be a token or several merged steps).

Output token ids (added after format version 1; absent/None in older records):
``output_token_ids`` is one flat list of the ids the request generated, in order, and
``output_token_ids_source`` says where they came from: ``"engine"`` (the engine streamed them:
vLLM ``token_ids``, SGLang ``output_ids``, llama.cpp ``tokens``), ``"reencoded"`` (the engine sent
only text, so the client encoded ``output_text`` with the target tokenizer, without special
tokens: an approximation, since a re-encoded text need not give the ids the model produced), or
None (no ids: a failed request). With ``"engine"`` ids the list is aligned with the chunks: chunk
i's ids are ``output_token_ids[o_i : o_i + chunk_tokens[i]]`` with ``o_i = sum(chunk_tokens[:i])``
(the offsets are the running sum, so none are stored); ``"reencoded"`` ids carry no alignment.

``engine_stats`` is the engine's own per-request speculative-decoding report, normalized into
``EngineSpecStats`` (with the raw fields kept in ``raw``).

Step definitions (one set, used by every engine adapter, the results, the report and the board;
see ``speedbench.metrics.acceptance.steps``):

- a *decode step* is one forward pass of the target model after the prefill; it emits
  ``1 + j`` tokens when it accepted ``j`` draft tokens, ``j = 0`` when it carried no draft;
- a *drafted step* (verification step) is a decode step that carried at least one draft token.
  With draft-model / EAGLE speculation every decode step is drafted; with n-gram (prompt lookup)
  speculation only the steps whose n-gram matched are (vLLM: ``num_spec_steps`` 34 of 63);
- ``drafted_tokens`` = draft tokens proposed, ``accepted_tokens`` = draft tokens accepted, as the
  engine counts them: engines count drafts accepted on a last step that ``max_tokens`` cut, which
  are never emitted (``accepted_past_max_tokens``; vLLM: 36 counted, 35 emitted).

Identities every record satisfies (``output_tokens`` includes the prefill's token):
``output_tokens = 1 + decode_steps + accepted_tokens - accepted_past_max_tokens``;
``drafted_steps <= decode_steps``; ``accepted_tokens <= drafted_tokens``;
``accepted_past_max_tokens > 0`` only when ``finish_reason`` is ``"length"``.

Two figures follow, named everywhere: the *acceptance length over drafted steps*
``AL = 1 + accepted_tokens / drafted_steps`` (vLLM's ``mean_acceptance_length``) and the
*tokens per decode step* ``(output_tokens - 1) / decode_steps``, which is what Appendix G's
``S = t_ar * AL / t_sd`` needs, since ``t_sd`` is the mean over all decode steps.

``verify_steps`` (format version 1, kept) is the denominator of the engine's own AL: drafted
steps for vLLM, SGLang and TensorRT-LLM, decode steps for llama.cpp (whose per-request timings do
not say which steps drafted). Readers use ``decode_steps`` / ``drafted_steps`` when present and
derive them from ``verify_steps`` otherwise (``speedbench.metrics.acceptance.steps.record_steps``).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

RECORD_FORMAT_VERSION = 1  # fields were only added since version 1; no meaning changed

# The files of a run folder (one definition; the client, the report and the board import these).
MANIFEST_NAME = "manifest.json"
RECORDS_NAME = "records.jsonl"
COUNTERS_NAME = "counters.jsonl"
RESULTS_NAME = "results.json"

# finish_reason values that mean the response was cut at max_tokens (engines spell it either way).
MAX_TOKENS_REASONS = frozenset({"length", "max_tokens"})

# Where a record's output_token_ids came from (TurnRecord.output_token_ids_source).
IDS_FROM_ENGINE = "engine"
IDS_REENCODED = "reencoded"


@dataclass
class EngineSpecStats:
    """A request's speculative-decoding statistics as the engine reported them.

    source: where they came from, e.g. ``"llamacpp.timings"``, ``"vllm.metrics"``,
    ``"sglang.meta_info"``, ``"trtllm.avg_decoded_tokens_per_iter"``.
    verify_steps: the denominator of the engine's own AL (drafted steps, or decode steps for
    llama.cpp); kept for format version 1 readers.
    draft_tokens: draft tokens proposed; accepted_tokens: draft tokens accepted (as the engine
    counts them, including any accepted past ``max_tokens``).
    acceptance_histogram: h_0..h_K over drafted steps, steps that accepted exactly j draft tokens
    (if reported; SGLang's is only as long as the largest count accepted, so it may be shorter).
    draft_length: K as the engine reports it (if it does; never inferred from a histogram).
    exact: False when the engine only gives a rounded proxy (TensorRT-LLM's average).
    decode_steps: every decode step after the prefill (drafted or not).
    drafted_steps: decode steps that carried a draft (None when the engine does not say).
    accepted_past_max_tokens: accepted drafts counted but not emitted because ``max_tokens`` cut
    the last step.
    """

    source: str
    verify_steps: int | None = None
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    acceptance_histogram: list[int] | None = None
    draft_length: int | None = None
    exact: bool = True
    raw: dict[str, Any] = field(default_factory=dict)
    # Added in the step-definition revision (None in older records: derive them, see module doc).
    decode_steps: int | None = None
    drafted_steps: int | None = None
    accepted_past_max_tokens: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "EngineSpecStats | None":
        if not data:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class TurnRecord:
    """One request-turn: what was sent, what streamed back and when, how it ended.

    record_key: unique within a run, ``"<point>/<question_id>/<turn_index>"`` (warmup requests:
    ``"<point>/warmup/<n>"``); resume skips keys already present.
    point: the load point this request belongs to (``"c16"`` = closed loop at concurrency 16,
    ``"r2.5"`` = open loop, Poisson arrivals at 2.5 requests/s).
    scheduled_ns: when the load shape meant to send it (closed loop: the moment a slot freed;
    open loop: the Poisson arrival); the measurement clock starts here, so client-side
    queueing counts against TTFT instead of vanishing.
    send_ns: when the HTTP request was actually written; end_ns: when the stream ended.
    prompt_sha256: hash of the prompt token ids (identical ids reach every engine).
    finish_reason: as the engine reported it (``"length"``, ``"stop"``, ...), None on error.
    error / error_kind: why it failed (``"timeout"``, ``"http_429"``, ``"http_5xx"``,
    ``"connection"``, ``"malformed"``, ``"cancelled"``), None when it succeeded.
    supersedes: a ``--retry-errors`` rerun's record replaces the ``supersedes`` failed records of the
    same ``record_key`` before it in the file (append-only history; readers keep each key's last).
    """

    record_key: str
    run_point: str
    load_shape: str  # "closed" | "open"
    requested_concurrency: int | None
    request_rate: float | None
    question_id: str
    category: str
    sub_category: str
    turn_index: int
    num_turns: int
    warmup: bool
    worker: int
    prompt_tokens: int
    prompt_sha256: str
    scheduled_ns: int
    send_ns: int
    end_ns: int
    started_unix_s: float
    chunk_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    chunks_are_steps: bool = False
    output_tokens: int = 0
    output_text: str = ""
    finish_reason: str | None = None
    response_id: str | None = None
    engine_stats: EngineSpecStats | None = None
    error: str | None = None
    error_kind: str | None = None
    # Added after format version 1 (see the module doc): flat ids, aligned with chunk_tokens when
    # their source is "engine"; "reencoded" when the client encoded output_text itself.
    output_token_ids: list[int] | None = None
    output_token_ids_source: str | None = None
    attempts: int = 1  # 2 when a stale kept-alive connection failed before any response and was retried
    # The largest lag of the client's event loop while the request was in flight (None: not sampled;
    # speedbench.metrics.client_timing): chunk stamps wait for the loop too.
    client_loop_lag_ns: int | None = None
    # Later turns: how the earlier answers entered the prompt (speedbench.tokenization.conversation):
    # as the engine's ids; as text (a token crossing an answer's edge, a template that rewrites
    # answers); and of those, how many leave tokens other than the engine's in the prompt (a
    # mismatch with the conversation as the engine produced it). None on first turns.
    prompt_answers_spliced: int | None = None
    prompt_answers_as_text: int | None = None
    prompt_answers_mismatched: int | None = None
    format_version: int = RECORD_FORMAT_VERSION
    # How many earlier records of this record_key this one supersedes: 0 in a first pass; n when a
    # resume with --retry-errors ran the request-turn again after n failed records of it (they stay
    # in the file as history; every reader drops them, speedbench.analysis.supersession).
    supersedes: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: dataclasses.asdict deep-copies every chunk list, which costs
        # milliseconds per long record at the rate records are written.
        data = {f.name: getattr(self, f.name) for f in _TURN_FIELDS}
        if self.engine_stats is not None:
            data["engine_stats"] = dataclasses.asdict(self.engine_stats)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TurnRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["engine_stats"] = EngineSpecStats.from_dict(values.get("engine_stats"))
        return cls(**values)

    # Derived timings, in seconds, from the scheduled send time.
    @property
    def ttft_s(self) -> float | None:
        return (self.chunk_ns[0] - self.scheduled_ns) / 1e9 if self.chunk_ns else None

    @property
    def e2e_s(self) -> float:
        return (self.end_ns - self.scheduled_ns) / 1e9


_TURN_FIELDS = dataclasses.fields(TurnRecord)
# The fields of a record that one streamed request produces: the client's ``StreamResult``
# (``speedbench.client.execution.stream``) is made of exactly these fields of ``TurnRecord``.
STREAM_FIELDS = ("send_ns", "end_ns", "chunk_ns", "chunk_tokens", "output_tokens", "output_text", "finish_reason",
                 "response_id", "engine_stats", "error", "error_kind", "attempts", "output_token_ids")


@dataclass
class RunManifest:
    """Everything needed to say what produced a run (written as ``manifest.json``).

    server: what the server said about itself (model id, engine version, props) at start.
    options: every client option (sampling, load shape, workers, timeouts, ...).
    dataset_config_sha256: content fingerprint of the config's rows
    (``speedbench.client.data.workload.dataset_fingerprint``), what the leaderboard identifies a build by;
    dataset_manifest_sha256: sha256 of the dataset folder's ``manifest.json`` (provenance, "" without one);
    tokenizer_sha256: ``speedbench.tokenization.target.tokenizer_fingerprint``;
    dataset_source: the Hub dataset a ``--dataset ORG/NAME`` run read (``hub_source.json``).
    """

    engine: str
    url: str
    model_id: str | None
    engine_version: str | None
    server: dict[str, Any]
    dataset_dir: str
    dataset_config: str
    dataset_config_sha256: str
    dataset_manifest_sha256: str
    num_rows: int
    tokenizer_path: str
    tokenizer_sha256: str
    chat_template: bool
    prompt_mode: str  # "chat" | "completion"
    options: dict[str, Any]
    client_version: str
    python_version: str
    created_unix_s: float
    format_version: int = RECORD_FORMAT_VERSION
    # where --dataset came from when it was a Hub id (repo_id, revision, config, rows), else None
    dataset_source: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunManifest":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def jsonl_lines(data: bytes, where: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-empty line of a JSONL file the client wrote; a torn
    last line (a run killed mid-write) is skipped, since resume reruns what it held."""
    lines = bytes(data).split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            if number >= len(lines) - 1:
                continue  # torn tail: the record was not complete, resume reruns it
            raise ValueError(f"{where}:{number}: not a JSON record: {error}") from error


def read_records(path: str | Path) -> Iterator[TurnRecord]:
    """Records of a ``records.jsonl``; a torn last line (a run killed mid-write) is skipped."""
    path = Path(path)
    if not path.exists():
        return
    for _, data in jsonl_lines(path.read_bytes(), str(path)):
        yield TurnRecord.from_dict(data)
