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
        self._asked_ns = 0  # when the sleep in progress should end (0: none yet)
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        interval_s = self.interval_ns / 1e9
        while True:
            self._asked_ns = asked = time.perf_counter_ns() + self.interval_ns
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
        """The largest lag among samples whose sleep overlapped ``[start_ns, end_ns]``, the sleep still
        in progress included with how late it already is (None: no sleep overlapped the window).

        A record is written the moment its request ends, often before the sleep spanning its end has
        woken: a request shorter than one interval, or one that a stall covered whole, would
        otherwise get no sample (a loaded run gave 7 of 8 requests a lag)."""
        first = bisect.bisect_left(self._ends, start_ns)
        # a sample ending after end_ns still overlaps when its sleep began (end - interval - lag) before it
        last = bisect.bisect_right(self._ends, end_ns)
        if last < len(self._ends) and self._ends[last] - self.interval_ns - self._lags[last] <= end_ns:
            last += 1
        lags = list(self._lags[first:last])
        if self._task is not None and self._asked_ns and last == len(self._ends) \
                and self._asked_ns - self.interval_ns <= end_ns:
            lags.append(max(0, time.perf_counter_ns() - self._asked_ns))
        return max(lags) if lags else None


__all__ = ["LoopLagMonitor", "SAMPLE_INTERVAL_S"]
