"""The Space's bound on connections that never send a request (issue 32): slow headers.

uvicorn (which Gradio's ``launch`` starts, with its own ``uvicorn.Config``: no
``limit_concurrency``, no option to pass) has no deadline on a request's head: a client that
sends one byte of its headers a second holds its connection, and a file descriptor, for ever, and
the ASGI app (:class:`sbspace.guard.RequestGuard`) never sees it, since no request exists until
the head is complete. :class:`ConnectionGuard` watches the running server's connections
(``server.server_state.connections``, uvicorn's own set) from a daemon thread and closes:

- a connection whose request head has not arrived within ``header_timeout_s`` of its opening, or
  of the end of its previous response (``SPEEDBENCH_HEADER_TIMEOUT_S``, default 20 s); a request
  in flight is never closed here (its body is the request guard's);
- past ``max_connections`` open connections (``SPEEDBENCH_MAX_OPEN_CONNECTIONS``, default 256),
  the ones waiting for a request head, longest waiting first, until the count is back at the cap.

It looks every ``min(1, header_timeout_s / 4)`` seconds, so a connection is closed within
``header_timeout_s`` + that. The decision to close is made again on the server's event loop, where
the connection's state changes, so a request that just started is never cut.
"""
from __future__ import annotations

import logging
import threading
import time

from sbspace.guard import GuardLimits

log = logging.getLogger(__name__)


def _waiting(protocol) -> bool:
    """An HTTP connection with no request in flight (uvicorn's ``cycle``: None before the first
    head, complete after a response): it is waiting for a request head."""
    cycle = protocol.cycle
    return cycle is None or cycle.response_complete


class ConnectionGuard:
    """Closes connections that hold the server without a request (module docstring)."""

    def __init__(self, server, limits: GuardLimits = GuardLimits(), clock=time.monotonic):
        self.server, self.limits, self.clock = server, limits, clock
        self._since: dict = {}  # protocol -> (its cycle when first seen waiting, when)
        self._stop = threading.Event()
        self.closed = 0

    def _http_connections(self) -> list:
        while True:
            try:  # the server's loop adds and removes connections meanwhile
                return [p for p in list(self.server.server_state.connections) if hasattr(p, "cycle")]
            except RuntimeError:
                continue

    def scan(self) -> list:
        """The connections to close now: past the head deadline, then past the cap."""
        now, connections = self.clock(), self._http_connections()
        since = {}
        for protocol in connections:
            if _waiting(protocol):
                cycle, start = self._since.get(protocol, (None, None))
                since[protocol] = (protocol.cycle, start if start is not None and cycle is protocol.cycle else now)
        self._since = since
        late = [p for p, (_, start) in since.items() if now - start >= self.limits.header_timeout_s]
        over = len(connections) - len(late) - self.limits.max_open_connections
        if over > 0:
            rest = sorted((p for p in since if p not in late), key=lambda p: since[p][1])
            late += rest[:over]
        return late

    def _close_if_still_waiting(self, protocol, cycle) -> None:
        """On the server's loop: the connection still has no request since it was judged."""
        if protocol.cycle is cycle and _waiting(protocol) and not protocol.transport.is_closing():
            protocol.transport.close()
            self.closed += 1

    def sweep(self) -> int:
        late = self.scan()
        for protocol in late:
            cycle = self._since.pop(protocol)[0]
            protocol.loop.call_soon_threadsafe(self._close_if_still_waiting, protocol, cycle)
        if late:
            log.info("closing %d connection(s) without a request head", len(late))
        return len(late)

    def start(self) -> "ConnectionGuard":
        threading.Thread(target=self._run, name="speedbench-connection-guard", daemon=True).start()
        return self

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(min(1.0, self.limits.header_timeout_s / 4)):
            try:
                self.sweep()
            except Exception:  # never a dead thread
                log.exception("connection guard failed")
