"""A per-submitter upload quota (issue 32: 50 uploads from one client in 24 s met no limit).

Each submitter (the Space's Hugging Face OAuth identity when the user signed in, else the client's
address as the server sees it) may start at most ``per_hour`` uploads in any sliding hour
(``SPEEDBENCH_UPLOADS_PER_HOUR``, 20); one more is refused before its file is read, with rule
``quota.uploads`` and the time until a slot frees. Rejected uploads count too: validating one
costs the same CPU. Memory is bounded: at most ``MAX_SUBMITTERS`` submitters are remembered (the
least recently seen are forgotten first).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from speedbench import settings

MAX_SUBMITTERS = 100_000
WINDOW_S = 3600.0


def uploads_per_hour() -> int:
    return int(settings.leaderboard_limit("SPEEDBENCH_UPLOADS_PER_HOUR", 20, int))


class UploadQuota:
    """``take(submitter)``: None when the upload may go ahead (and counted), else the seconds until
    the submitter's oldest upload in the window leaves it."""

    def __init__(self, per_hour: int, clock: Callable[[], float] = time.monotonic, window_s: float = WINDOW_S):
        self.per_hour, self.clock, self.window_s = per_hour, clock, window_s
        self._seen: "OrderedDict[str, deque[float]]" = OrderedDict()
        self._lock = threading.Lock()

    def take(self, submitter: str) -> float | None:
        now = self.clock()
        with self._lock:
            times = self._seen.pop(submitter, None) or deque()
            while times and now - times[0] >= self.window_s:
                times.popleft()
            self._seen[submitter] = times  # most recently seen last
            while len(self._seen) > MAX_SUBMITTERS:
                self._seen.popitem(last=False)
            if len(times) >= self.per_hour:
                return self.window_s - (now - times[0])
            times.append(now)
            return None


def submitter_of(username: str | None, client_host: str | None) -> str:
    """The quota's key: the OAuth identity when there is one, else the client address."""
    return f"user:{username}" if username else f"addr:{client_host or 'unknown'}"
