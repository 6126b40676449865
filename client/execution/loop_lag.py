"""The client's own lag: how late its event loop runs, sampled while a phase runs.

A task sleeps ``interval_s`` again and again; each wake-up later than asked is the time the loop
could not run anything (a blocked callback, a descheduled process on a busy machine). Every
chunk stamp waits for the loop the same way, so a request's records carry the largest lag seen
while it was in flight (``TurnRecord.client_loop_lag_ns``), and the results report its spread per
load point (``speedbench.metrics.client_timing``).
"""
from __future__ import annotations

import asyncio
import bisect
import time
from array import array

SAMPLE_INTERVAL_S = 0.005


class LoopLagMonitor:
    """Samples the running loop's lateness; :meth:`max_lag_ns` answers for a time window."""

    def __init__(self, interval_s: float = SAMPLE_INTERVAL_S):
        self.interval_ns = int(interval_s * 1e9)
        self._ends = array("q")  # when each sample's sleep ended (perf_counter_ns), ascending
        self._lags = array("q")  # how much later than asked it ended
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        interval_s = self.interval_ns / 1e9
        while True:
            asked = time.perf_counter_ns() + self.interval_ns
            await asyncio.sleep(interval_s)
            now = time.perf_counter_ns()
            self._ends.append(now)
            self._lags.append(max(0, now - asked))

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._sample())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    def max_lag_ns(self, start_ns: int, end_ns: int) -> int | None:
        """The largest lag among samples whose sleep overlapped ``[start_ns, end_ns]`` (None: none did)."""
        first = bisect.bisect_left(self._ends, start_ns)
        # a sample ending after end_ns still overlaps when its sleep began (end - interval - lag) before it
        last = bisect.bisect_right(self._ends, end_ns)
        if last < len(self._ends) and self._ends[last] - self.interval_ns - self._lags[last] <= end_ns:
            last += 1
        if first >= last:
            return None
        return max(self._lags[first:last])


__all__ = ["LoopLagMonitor", "SAMPLE_INTERVAL_S"]
