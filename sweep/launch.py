"""``python -m speedbench.sweep.launch PROGRAM ARGS...``: exec the server, tied to the sweep's life.

The sweep starts each server through this shim in a new session (its own process group). The
shim asks the kernel to send SIGTERM to the server when the sweep's process dies (``prctl
PR_SET_PDEATHSIG``, kept across ``exec``), then replaces itself with the server: a sweep killed
with SIGKILL does not leave a server running (and the next sweep also reaps what it recorded).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

from speedbench import settings

_PR_SET_PDEATHSIG = 1


def main() -> None:
    argv = sys.argv[1:]
    if not argv:
        sys.exit("usage: python -m speedbench.sweep.launch PROGRAM [ARGS...]")
    parent = settings.take_sweep_parent_pid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the sweep's own reaping still applies
        pass
    if parent and os.getppid() != parent:  # the sweep died before the prctl took effect
        sys.exit(1)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
