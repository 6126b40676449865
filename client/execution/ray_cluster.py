"""Joining the Ray cluster behind ``--ray``: the address checked first, Ray's failures made plain.

``ray.init`` retries an unreachable address for minutes: a TCP probe of the head's port fails at
once instead, naming the address. Every failure to join is a ``RayClusterError`` (``speedbench run``
exits with 2 before any request is sent).
"""
from __future__ import annotations

import socket

CONNECT_TIMEOUT_S = 10.0  # TCP reachability of the head before ray.init (which retries for minutes)
NAMESPACE = "speedbench"


class RayClusterError(RuntimeError):
    """The cluster cannot run this run's workers (``speedbench run`` exits with 2, records kept)."""


def _probe_address(address: str) -> None:
    """Fail fast, naming ``address``, when nothing listens there (``ray.init`` would retry for minutes)."""
    if address == "auto":
        return
    target = address.split("://", 1)[1] if "://" in address else address
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise RayClusterError(f"--ray {address!r}: expected auto, HOST:PORT (the head's GCS port) or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise RayClusterError(f"Ray cluster at {address} is unreachable ({error}); start it with `ray start --head` "
                              f"or pass the head's address (no request was sent)") from error


def connect(address: str):
    """``(ray, started)``: joins the cluster at ``address`` unless this process already has."""
    try:
        import ray
    except ImportError as error:
        raise RayClusterError("--ray needs Ray: pip install 'speed-bench[ray]'") from error
    if ray.is_initialized():
        return ray, False
    _probe_address(address)
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level="WARNING")
    except Exception as error:  # ConnectionError, AuthenticationError, ...: all mean "not joined"
        raise RayClusterError(f"cannot join the Ray cluster at {address}: {type(error).__name__}: {error}") from error
    return ray, True
