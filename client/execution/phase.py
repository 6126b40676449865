"""What every executor shares: the client settings a worker gets, one phase's spec, record keys,
the run-wide error budget."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speedbench.settings import MAX_ERRORS, READ_TIMEOUT_S, REQUEST_TIMEOUT_S


class ErrorBudgetExceeded(RuntimeError):
    pass


@dataclass
class ClientSettings:
    """Everything a worker needs to talk to the engine (picklable, sent to worker processes)."""

    engine: str
    url: str
    model: str | None
    sampling: dict[str, Any]
    extra_body: dict[str, Any]
    tokenizer_path: str
    prompt_mode: str
    records_path: str
    request_timeout_s: float | None = REQUEST_TIMEOUT_S
    read_timeout_s: float | None = READ_TIMEOUT_S
    max_errors: int = MAX_ERRORS


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
