"""One interface for running a phase, whoever runs it: this process, local worker processes or
Ray actors on a cluster.

The orchestration (``speedbench.client.run``) builds one executor per run with ``make_executor``
and hands it every measured phase; it never asks which kind it holds. Every executor writes the
phase's records to ``settings.records_path`` (each key once), moves the progress bar by the
measured records it wrote, and returns how many conversations it ran twice because a worker was
lost mid-phase (their counter deltas then include the lost attempts).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from speedbench.client.data.workload import Conversation
    from speedbench.client.execution.phase import ClientSettings, PhaseSpec


class Executor(Protocol):
    def run_phase(self, settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation],
                  progress=None) -> int:
        """Run the phase's conversations; returns the conversations rerun after a lost worker."""

    def close(self) -> None:
        """Release what the executor holds (processes end with each phase; Ray actors here)."""


def make_executor(workers: int, ray_address: str | None, tokenizer: str, out: str, log=print) -> Executor:
    """``--ray``: Ray actors, joined, placed and their clocks probed before any request
    (``ray_pool``); else ``--workers`` local processes (``processes``; one: this process)."""
    if ray_address:
        from speedbench.client.execution.ray_pool import RayWorkerPool

        return RayWorkerPool(ray_address, workers, tokenizer, out, log)
    from speedbench.client.execution.processes import LocalExecutor

    return LocalExecutor(workers)
