"""Load shapes: when each conversation of a phase starts.

Closed loop: ``concurrency`` slots; each slot takes the next conversation as soon as its
previous one ends. Open loop: each conversation starts at its own arrival time (exponential
gaps at ``rate`` requests/s, drawn by the parent from a seed: ``poisson_offsets_ns``), however
many are in flight. Each shape is a small object (``ClosedLoop``, ``OpenLoop``) whose ``drive``
decides when each conversation starts; the executor (``speedbench.client.execution.event_loop``)
passes the function that runs one conversation.
"""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from speedbench.client.data.workload import Conversation
    from speedbench.client.execution.phase import PhaseSpec


def poisson_offsets_ns(count: int, rate: float, seed: int) -> list[int]:
    """Arrival times of a Poisson process at ``rate``/s: cumulative exponential gaps, seeded."""
    generator = random.Random(seed)
    offsets, now = [], 0.0
    for _ in range(count):
        offsets.append(int(now * 1e9))
        now += generator.expovariate(rate)
    return offsets


async def sleep_until(deadline_ns: int) -> None:
    # Event-loop timers may fire up to a millisecond early (uvloop rounds to ms): never send
    # before the scheduled time, or TTFT would start after the request left.
    while True:
        delay = (deadline_ns - time.perf_counter_ns()) / 1e9
        if delay <= 0:
            return
        await asyncio.sleep(delay)


# Runs one conversation from its scheduled start; returns its end time (when its slot frees).
RunConversation = Callable[["Conversation", int], Awaitable[int]]


@dataclass(frozen=True)
class ClosedLoop:
    """Fixed concurrency: ``slots`` slots, each taking the next conversation when its previous one ends."""

    slots: int

    @property
    def in_flight_limit(self) -> int:
        return self.slots

    async def drive(self, conversations: list[Conversation], start_ns: int, run_one: RunConversation,
                    stopped: Callable[[], bool]) -> None:
        """Conversations in order; a slot's first is scheduled at ``start_ns``, each later one at the
        end of the slot's previous one. Stops taking new ones once ``stopped()``."""
        queue = list(reversed(conversations))

        async def slot() -> None:
            scheduled = start_ns
            await sleep_until(scheduled)
            while queue and not stopped():
                scheduled = await run_one(queue.pop(), scheduled)

        await asyncio.gather(*(slot() for _ in range(max(1, self.slots))))


@dataclass(frozen=True)
class OpenLoop:
    """Open loop: conversation i starts at ``start_ns + offsets_ns[i]`` however many are in flight
    (the offsets are the parent's seeded Poisson arrivals, this worker's share of them)."""

    offsets_ns: list[int] | None

    @property
    def in_flight_limit(self) -> int:
        return 0  # aiohttp: no limit

    async def drive(self, conversations: list[Conversation], start_ns: int, run_one: RunConversation,
                    stopped: Callable[[], bool]) -> None:
        """Start each conversation at its arrival time; no new starts once ``stopped()``."""
        offsets = self.offsets_ns or [0] * len(conversations)
        tasks = []
        for conversation, offset in zip(conversations, offsets):
            if stopped():
                break
            scheduled = start_ns + offset
            await sleep_until(scheduled)
            tasks.append(asyncio.ensure_future(run_one(conversation, scheduled)))
        await asyncio.gather(*tasks)


def load_shape_for(phase: PhaseSpec) -> ClosedLoop | OpenLoop:
    """The phase's load shape as the object that schedules its conversations."""
    if phase.load_shape == "closed":
        return ClosedLoop(phase.slots)
    return OpenLoop(phase.arrival_offsets_ns)
