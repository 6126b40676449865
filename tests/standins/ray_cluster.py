"""A private Ray cluster on this machine for tests and benchmarks: a head and worker nodes, each
started with ``ray start --block`` in its own session on its own loopback address.

Ray turns ``127.0.0.1`` into the host's network address (``resolve_ip_for_localhost``), so each
node gets another loopback address (``127.0.0.2`` for the head, ``127.0.0.3``, ... for workers):
every byte stays on ``lo`` and the nodes are told apart by IP as on real hosts. Every port is
picked free, token authentication is off (private loopback cluster) unless ``auth_token`` is given
(then every node runs with ``RAY_AUTH_MODE=token`` and that token, as Ray 2.59+ clusters do by
default), the dashboard is off and the object store small. ``stop`` ends only the processes this object started (SIGTERM to each
``ray start``, which stops its node; SIGKILL to their process groups after that), never
``ray stop``, which would end every Ray cluster of this user on the machine.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OBJECT_STORE_BYTES = 100 * 2**20
STOP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cluster_env() -> dict[str, str]:
    """What the nodes and every driver of the private cluster run with."""
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


class LocalRayCluster:
    def __init__(self, workers: int = 1, cpus_per_node: int = 1, auth_token: str | None = None):
        self.workers, self.cpus = workers, cpus_per_node
        self.env = {**cluster_env(), **({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": auth_token} if auth_token else {})}
        # Short: Ray's unix socket paths live under it (at most 107 bytes).
        self.temp = Path(tempfile.mkdtemp(prefix="sbray", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.2:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def _node(self, ip: str, *args: str) -> subprocess.Popen:
        ray = str(Path(sys.executable).with_name("ray"))
        command = [ray, "start", *args, f"--node-ip-address={ip}", f"--num-cpus={self.cpus}",
                   f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats", "--block",
                   f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
                   f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
                   f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}"]
        log = open(self.temp / f"node-{ip}.log", "wb")
        # TMPDIR: the actors' own files (a killed actor leaves its folder) go with the cluster's.
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**self.env, "TMPDIR": str(self.temp)}, start_new_session=True)
        log.close()
        self.processes.append(process)
        return process

    def start_head(self) -> None:
        self._node("127.0.0.2", "--head", f"--port={self.port}", f"--temp-dir={self.temp}",
                   "--include-dashboard=false", f"--dashboard-port={free_port()}")

    def wait_for_head(self, timeout_s: float = 120.0) -> None:
        """Until ``ray start`` says the head runs (a driver can then try to join), read from its log:
        the tests' socket guard keeps this process off 127.0.0.2."""
        deadline = time.monotonic() + timeout_s
        log = self.temp / "node-127.0.0.2.log"
        while b"Ray runtime started" not in log.read_bytes():
            if self.processes[0].poll() is not None:
                raise RuntimeError(f"ray start exited with {self.processes[0].returncode}; logs in {self.temp}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Ray head not started after {timeout_s:g} s; logs in {self.temp}")
            time.sleep(0.2)

    def start_workers(self) -> None:
        for number in range(self.workers):
            self._node(f"127.0.0.{3 + number}", f"--address={self.address}")

    def wait_for_nodes(self, ray, timeout_s: float = 300.0) -> None:
        """Until every node is alive in ``ray.nodes()`` (``ray`` joined to this cluster)."""
        deadline = time.monotonic() + timeout_s
        while sum(1 for node in ray.nodes() if node["Alive"]) < 1 + self.workers:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"ray start exited with {process.returncode}; logs in {self.temp}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Ray nodes not alive after {timeout_s:g} s; logs in {self.temp}")
            time.sleep(0.2)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # what is left of this node (its session's group)
            except (ProcessLookupError, PermissionError):
                pass
            process.wait()
        shutil.rmtree(self.temp, ignore_errors=True)
