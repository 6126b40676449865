"""Joining the Ray cluster behind ``--ray``: the address checked first, Ray's failures made plain.

``ray.init`` retries an unreachable address for minutes: a TCP probe of the head's port fails at
once instead, naming the address. Ray 2.59+ starts clusters with token authentication
(``RAY_AUTH_MODE=token``), and ``ray.init`` with an explicit address never picks a token up by
itself: against such a cluster it retries for about 20 s and raises a bare ``ConnectionError``.
So before joining, one request of Ray's own GCS client (which raises Ray's
``AuthenticationError`` at once) tells whether the head accepts this process's credentials, and a
refusal says what to set (docs/ray.md). Every failure to join is a ``RayClusterError``
(``speedbench run`` exits with 2 before any request is sent).
"""
from __future__ import annotations

import socket

from speedbench import settings

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
    _check_credentials(address)
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level="WARNING")
    except ray.exceptions.AuthenticationError as error:
        raise RayClusterError(auth_refused(address, error)) from None
    except Exception as error:  # ConnectionError, RuntimeError, ...: all mean "not joined"
        raise RayClusterError(f"cannot join the Ray cluster at {address}: {type(error).__name__}: {error}") from error
    return ray, True


def _check_credentials(address: str) -> None:
    """Raise ``RayClusterError`` when the head at ``address`` (HOST:PORT) refuses this process's
    credentials (Ray's ``AuthenticationError`` from one GCS request); other failures are left to
    ``ray.init``, whose own message is then clearer."""
    if address == "auto" or "://" in address:  # auto: ray.init finds the local token itself
        return
    import ray
    from ray._raylet import GcsClient  # Ray's own client, as its CLI and autoscaler use it

    try:
        GcsClient(address=address)
    except ray.exceptions.AuthenticationError as error:
        raise RayClusterError(auth_refused(address, error)) from None
    except Exception:  # not a GCS, or it went away: ray.init says what is wrong
        return


def auth_refused(address: str, error: Exception) -> str:
    """What to do when the cluster at ``address`` refused this driver (Ray's ``AuthenticationError``)."""
    ray_says = str(getattr(error, "message", error)).split(". ")[0]  # Ray's own first sentence
    where = ("RAY_AUTH_TOKEN=<token>, or RAY_AUTH_TOKEN_PATH=<file holding it>, or the token in "
             "~/.ray/auth_token; `ray get-auth-token` on the head prints it")
    if (settings.ray_auth_mode() or "").lower() != "token":
        return (f"the Ray cluster at {address} uses token authentication and this driver sends no token "
                f"(RAY_AUTH_MODE is {settings.ray_auth_mode() or 'unset'}; Ray: {ray_says}). Run with "
                f"RAY_AUTH_MODE=token and the cluster's token: {where}. See docs/ray.md; no request was sent")
    source = settings.ray_auth_token_source()
    if source is None:
        return (f"RAY_AUTH_MODE=token but this driver has no token for the Ray cluster at {address} (Ray: "
                f"{ray_says}); give the cluster's token: {where}. See docs/ray.md; no request was sent")
    return (f"the Ray cluster at {address} refused this driver's token (from {source}; Ray: {ray_says}); give "
            f"the token the cluster was started with: {where}. See docs/ray.md; no request was sent")
