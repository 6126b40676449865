"""The event-loop lag monitor: a callback that blocks the loop shows up as lag in the window it blocked."""
from __future__ import annotations

import asyncio
import time

from speedbench.client.execution.loop_lag import LoopLagMonitor


def test_a_blocked_loop_is_measured():
    async def main():
        monitor = LoopLagMonitor(interval_s=0.001)
        monitor.start()
        await asyncio.sleep(0.01)  # let it take samples
        before = time.perf_counter_ns()
        time.sleep(0.05)  # a callback that holds the loop for 50 ms (what a lagging client does)
        after = time.perf_counter_ns()
        await asyncio.sleep(0.01)
        await monitor.stop()
        return monitor, before, after

    monitor, before, after = asyncio.run(main())
    # the sample whose sleep spanned the block woke at least the block's length late, less its own interval
    assert monitor.max_lag_ns(before, after) >= (after - before) - monitor.interval_ns
    assert monitor.max_lag_ns(after + 10**12, after + 2 * 10**12) is None  # no sample in that window


def test_a_request_ended_before_the_spanning_sample_woke_still_gets_a_lag():
    """A record is written the moment its request ends; the sleep spanning that end has often not
    woken yet (a loaded vLLM run gave 7 of its 8 requests a lag). The sleep in progress counts."""
    async def main():
        quiet = LoopLagMonitor(interval_s=60)  # no sample can wake during this test
        quiet.start()
        await asyncio.sleep(0)  # its first sleep begins
        start = time.perf_counter_ns()
        quiet_lag = quiet.max_lag_ns(start, start + 1)
        await quiet.stop()
        busy = LoopLagMonitor(interval_s=0.001)
        busy.start()
        await asyncio.sleep(0)
        start = time.perf_counter_ns()
        while time.perf_counter_ns() < start + 20_000_000:  # the loop held for 20 ms, the request inside
            pass
        busy_lag = busy.max_lag_ns(start, start + 1)
        await busy.stop()
        return quiet_lag, busy_lag

    quiet_lag, busy_lag = asyncio.run(main())
    assert quiet_lag == 0  # in progress and not late yet (None before)
    # the sleep began before `start` and asked to end at most 1 ms after it; it is now 20 ms past
    assert busy_lag >= 19_000_000
