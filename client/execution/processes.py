"""Running a phase in N worker processes, each with its own event loop (uvloop where available).

One Python process tops out at a few thousand streamed chunks per second (the GIL, JSON, the
event loop); past that its own lag shows up as fake server latency. ``--workers N`` splits the
conversations round-robin over N processes, gives each its share of the closed-loop concurrency
(or the open-loop arrivals), its own connection pool, and a common start time on the shared
monotonic clock. All of them append to the same ``records.jsonl`` (one ``O_APPEND`` write per
line). The error budget is one shared counter. Beyond one host, ``--ray`` runs the same split
(``partition_phase``) as Ray actors on a cluster's nodes (``ray_pool``).
"""
from __future__ import annotations

import asyncio
import multiprocessing
import signal
import sys
import time
from dataclasses import replace

from speedbench import settings
from speedbench.client.execution.event_loop import run_phase
from speedbench.client.execution.phase import (
    ClientSettings,
    ErrorBudgetExceeded,
    ErrorCounter,
    PhaseSpec,
    record_key,
)
from speedbench.client.data.workload import Conversation
from speedbench.records import IDS_FROM_ENGINE, TurnRecord

START_DELAY_S = 0.05  # after every worker reported ready: time to leave the barrier


def run_event_loop(coroutine):
    """Run with uvloop when installed (faster I/O), else the default asyncio loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency of the client extra
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def _start_method() -> str:
    """``fork`` where available (starts in milliseconds; workers only use aiohttp, the tokenizer's
    single-string encode and plain files, nothing that breaks across fork), else ``spawn``;
    ``SPEEDBENCH_WORKER_START`` overrides."""
    method = settings.worker_start_method()
    if method:
        return method
    return "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform == "linux" else "spawn"


def split_concurrency(concurrency: int, workers: int) -> list[int]:
    """Shares that add up to ``concurrency`` (no worker gets zero slots unless concurrency < workers)."""
    base, extra = divmod(concurrency, workers)
    return [base + (1 if index < extra else 0) for index in range(workers)]


def partition_phase(phase: PhaseSpec, conversations: list[Conversation], workers: int,
                    concurrency: int | None = None) -> list[tuple[int, PhaseSpec, list[Conversation]]]:
    """``(worker, its phase, its conversations)`` for each worker that gets any: conversations
    round-robin, the closed loop's concurrency split by ``split_concurrency``, the open loop's
    arrival offsets dealt with their conversations (every worker keeps the common start).
    The same split serves worker processes and Ray actors, so both write the same records.
    ``concurrency``: the slots to split when not the phase's own (a rerun of a lost worker's share)."""
    slots = concurrency or phase.requested_concurrency or 1
    shares = split_concurrency(slots, workers) if phase.load_shape == "closed" else None
    # Closed loop: a worker whose share is 0 slots (concurrency < workers) gets no conversations.
    active = [w for w in range(workers) if not shares or shares[w] > 0]
    parts = []
    for position, worker in enumerate(active):
        mine = conversations[position::len(active)]
        if not mine:
            continue
        offsets = phase.arrival_offsets_ns[position::len(active)] if phase.arrival_offsets_ns else None
        parts.append((worker, replace(phase, slots=(shares[worker] if shares else 1), arrival_offsets_ns=offsets),
                      mine))
    return parts


def done_maps(existing: dict[str, TurnRecord]) -> tuple[dict[str, str | None], dict[str, list[int]]]:
    """What a phase skips, from the records already written: ``record_key -> output text`` (None:
    failed) and the engine's ids of answers a later turn needs (a resumed conversation splices
    them into its history exactly)."""
    done = {key: (r.output_text if r.ok else None) for key, r in existing.items()}
    done_ids = {key: r.output_token_ids for key, r in existing.items()
                if r.ok and r.output_token_ids_source == IDS_FROM_ENGINE and r.turn_index < r.num_turns - 1}
    return done, done_ids


def _worker_main(settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation], worker: int,
                 shared_errors, status_queue, go, start_ns) -> None:
    # The parent owns Ctrl-C: it terminates the workers, whose records so far are complete lines.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import aiohttp  # noqa: F401  (imports done before the start barrier, not on the clock)

        from speedbench.client.engines import get_adapter
        get_adapter(settings.engine)
        status_queue.put((worker, "ready", ""))
        go.wait()
        phase = replace(phase, start_ns=start_ns.value)
        run_event_loop(run_phase(settings, phase, conversations, worker, ErrorCounter(shared_errors)))
        status_queue.put((worker, "ok", ""))
    except ErrorBudgetExceeded as error:
        status_queue.put((worker, "budget", str(error)))
    except BaseException as error:  # report, do not hang the parent
        status_queue.put((worker, "error", f"{type(error).__name__}: {error}"))


class LocalExecutor:
    """The executor (``executor.Executor``) of ``--workers N`` on this host."""

    def __init__(self, workers: int = 1):
        self.workers = workers

    def run_phase(self, settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation],
                  progress=None) -> int:
        todo = sum(1 for c in conversations for t in range(len(c.turns))
                   if record_key(phase.run_point, c.question_id, t, phase.warmup) not in phase.done)
        run_phase_in_workers(settings, phase, conversations, self.workers, progress)
        if progress is not None and self.workers > 1 and not phase.warmup:
            progress.update(todo)  # worker processes cannot move this process's bar: the phase's turns at once
        return 0  # a local worker that dies fails the run; nothing is rerun

    def close(self) -> None:
        pass


def run_phase_in_workers(settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation],
                         workers: int, progress=None) -> None:
    """Run one phase; with ``workers == 1`` in this process, else in ``workers`` processes."""
    if workers <= 1:
        def on_record(record):
            if progress is not None:
                progress.update(1)
        phase = replace(phase, start_ns=time.perf_counter_ns(), slots=phase.slots)
        run_event_loop(run_phase(settings, phase, conversations, 0, ErrorCounter(), on_record))
        return
    context = multiprocessing.get_context(_start_method())
    shared_errors = context.Value("i", 0)
    status_queue = context.Queue()
    go = context.Event()
    start_ns = context.Value("q", 0)
    processes = []
    for worker, worker_phase, mine in partition_phase(phase, conversations, workers):
        process = context.Process(target=_worker_main, name=f"speedbench-worker-{worker}",
                                  args=(settings, worker_phase, mine, worker, shared_errors, status_queue, go,
                                        start_ns),
                                  daemon=True)
        process.start()
        processes.append(process)
    failures: list[str] = []
    budget: list[str] = []
    try:
        ready = 0
        while ready < len(processes):
            worker, status, message = status_queue.get()
            if status != "ready":
                raise RuntimeError(f"worker {worker} failed before starting: {message}")
            ready += 1
        # Every worker is imported and waiting: one common start on the shared monotonic clock.
        start_ns.value = time.perf_counter_ns() + int(START_DELAY_S * 1e9)
        go.set()
        pending = len(processes)
        while pending:
            worker, status, message = status_queue.get()
            pending -= 1
            if status == "budget":
                budget.append(message)
            elif status == "error":
                failures.append(f"worker {worker}: {message}")
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()
    if budget:
        raise ErrorBudgetExceeded(budget[0])
    if failures:
        raise RuntimeError("; ".join(failures))
