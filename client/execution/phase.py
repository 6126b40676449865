"""What every executor shares: the options every request needs, one phase's spec, record keys,
the run-wide error budget."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speedbench.client.engines.base import REQUESTS, SamplingOptions
from speedbench.options import json_object, nested, option, reuse
from speedbench.settings import MAX_ERRORS, READ_TIMEOUT_S, REQUEST_TIMEOUT_S, SharedOptions

TARGET = "target"  # the --help group naming the server and model


class ErrorBudgetExceeded(RuntimeError):
    pass


@dataclass(kw_only=True)
class RequestOptions:
    """The options of ``speedbench run`` that every worker needs to send requests, declared once
    (``speedbench.options``: flag, help, default, recorded in the manifest, compared on resume).
    ``RunOptions`` (the whole command) and ``ClientSettings`` (what a worker gets) extend it."""

    engine: str = reuse(SharedOptions, "engine", group=TARGET)  # declared once: speedbench/settings.py
    url: str = option("--url", group=TARGET, help="server base URL, e.g. http://127.0.0.1:8000")
    tokenizer: str = option("--tokenizer", group=TARGET, help=(
        "folder with the target model's tokenizer.json, or a Hub model id ORG/NAME[@REVISION] (its tokenizer "
        "files read from the Hugging Face cache; see --online)"))
    chat_template_kwargs: dict[str, Any] = option(
        "--chat-template-kwargs", default_factory=dict, parse=json_object, recorded=True, resume=True, group=TARGET,
        help="JSON object passed to the chat template, e.g. '{\"enable_thinking\": false}' (a name the template "
             "never reads is refused; docs/protocol.md)")
    model: str | None = option("--model", default=None, recorded=True, resume=True, group=TARGET,
                               help="model name sent in the request (OpenAI-style engines)")
    prompt_mode: str = option("--prompt-mode", default="chat", choices=("chat", "completion"), group=TARGET,
                              help="chat: apply the chat template with add_generation_prompt; "
                                   "completion: raw text with the tokenizer's own special tokens")
    api: str = option("--api", default="native", choices=("native", "openai"), recorded=True, resume=True,
                      group=TARGET, help="the engine's route: native (its own) or, for sglang, openai "
                                         "(/v1/completions, statistics from sglext.spec_tokens_details)")
    sampling: SamplingOptions = nested(SamplingOptions, recorded=True, resume=True)
    extra_body: dict[str, Any] = option("--extra-body", default_factory=dict, parse=json_object, recorded=True,
                                        resume=True, group=REQUESTS,
                                        help="JSON object merged into every request body (engine-specific options)")
    request_timeout_s: float | None = option("--request-timeout", default=REQUEST_TIMEOUT_S, parse=float,
                                             recorded=True, group=REQUESTS, help="seconds per request")
    read_timeout_s: float | None = option("--read-timeout", default=READ_TIMEOUT_S, parse=float, recorded=True,
                                          group=REQUESTS, help="seconds without a byte before a request times out")
    max_errors: int = option("--max-errors", default=MAX_ERRORS, parse=int, recorded=True, group=REQUESTS,
                             help="error budget: stop the run after this many failed requests")


@dataclass(kw_only=True)
class ClientSettings(RequestOptions):
    """Everything a worker needs to talk to the engine (picklable, sent to worker processes and
    Ray actors): the request options plus where its records go."""

    records_path: str


@dataclass
class PhaseSpec:
    """One pass over a list of conversations at one load point (measured or warmup)."""

    run_point: str
    load_shape: str  # "closed" | "open"
    requested_concurrency: int | None
    request_rate: float | None
    warmup: bool
    start_ns: int  # common start on the monotonic clock (shared by all workers)
    slots: int = 1  # this worker's share of the closed-loop concurrency
    arrival_offsets_ns: list[int] | None = None  # open loop: one per conversation, in order
    done: dict[str, str | None] = field(default_factory=dict)  # record_key -> output text (None: failed)
    done_ids: dict[str, list[int]] = field(default_factory=dict)  # record_key -> the engine's output ids
    # record_key -> records of it already in the file: a --retry-errors rerun writes it in ``supersedes``
    supersedes: dict[str, int] = field(default_factory=dict)


def record_key(run_point: str, question_id: str, turn_index: int, warmup: bool = False) -> str:
    if warmup:
        return f"{run_point}/warmup/{question_id}/{turn_index}"
    return f"{run_point}/{question_id}/{turn_index}"


class ErrorCounter:
    """Errors so far; a multiprocessing.Value when shared between worker processes."""

    def __init__(self, shared=None):
        self._shared = shared
        self._local = 0

    def add(self) -> int:
        if self._shared is None:
            self._local += 1
            return self._local
        with self._shared.get_lock():
            self._shared.value += 1
            return self._shared.value

    @property
    def value(self) -> int:
        return self._local if self._shared is None else self._shared.value
