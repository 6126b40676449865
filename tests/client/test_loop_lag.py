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
