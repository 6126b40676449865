"""A phase's workers as Ray actors on a Ray cluster: ``speedbench run --ray auto|ADDRESS --workers N``.

When one host cannot drive the engine hard enough, the ``--workers`` loop (``processes.py``) runs
as ``N`` Ray actors instead of ``N`` local processes: one placement group of ``N`` one-CPU
bundles with the SPREAD strategy puts them on different nodes where it can. Each actor runs its
share of the phase (the same ``partition_phase`` split: conversations round-robin, its part of
the closed-loop concurrency or of the Poisson arrivals, a common start) in its own thread, event
loop and connection pool, writing records to a file on its own node. The driver long-polls every
actor for the complete lines written since the last poll and appends them to ``records.jsonl``
as they arrive, so resume, manifests and results work as for local workers.

Clocks (``ray_clock``): each actor's clocks are probed when it starts; its records are moved onto
the driver's monotonic timeline by the measured shift (exactly 0 on the driver's own host) and
the estimates are appended to ``manifest.json`` under ``clock_offsets``. An actor outside the
bounds fails the run before any request is sent.

Failures: an unreachable address fails at once, naming it; a cluster too small for ``N`` CPUs
fails before anything runs. An actor that dies mid-phase loses only the records the driver had
not received yet: when the others are done, the driver reruns its conversations' missing
request-turns on the surviving actors (the resume logic: finished turns are kept and their
answers spliced into later turns), never writing a key twice; the point's counter deltas are then
marked incomplete. Dead actors are replaced before the next phase.

Ray is imported only here and only when ``--ray`` is given (extra ``ray``); every node needs the
same speed-bench version with the ``client`` extra installed.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from speedbench.client.execution.phase import ClientSettings, ErrorBudgetExceeded, PhaseSpec, record_key
from speedbench.client.execution.ray_actor import PhaseWorker, boot_id
from speedbench.client.execution.ray_cluster import NAMESPACE, RayClusterError, connect
from speedbench.client.execution.ray_clock import (
    CLOCK_PROBES,
    MAX_CLOCK_OFFSET_S,
    MAX_CLOCK_UNCERTAINTY_S,
    ClockEstimate,
    ClockOffsetError,
    check_clock,
    estimate_clock,
)
from speedbench.client.recording.writer import load_existing
from speedbench.client.execution.processes import done_maps, partition_phase
from speedbench.client.data.workload import Conversation
from speedbench.records import MANIFEST_NAME
from speedbench.tokenization.target import TOKENIZER_FILES

RAY_START_DELAY_S = 0.5  # after the start calls went out: time for them to reach every actor
READY_TIMEOUT_S = 300.0  # placement group placed and actors started
STALL_S = 120.0  # an actor that answers no poll for this long is killed and counted as lost
REPLACE_TIMEOUT_S = 60.0  # a dead actor's replacement (its node may be gone for good)
MAX_RERUNS = 3  # rounds of reruns after actor deaths within one phase
ACTOR_PREFIX = "speedbench-worker-"


@dataclass
class _Actor:
    index: int
    handle: object
    info: dict
    clock: ClockEstimate
    entry: dict  # its part of the manifest's clock_offsets
    alive: bool = True


@dataclass
class _Round:
    """What one round of a phase left: shares lost with their actor, budget stops, failures."""

    lost: dict[int, tuple[PhaseSpec, list[Conversation], str]] = field(default_factory=dict)
    budget: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class _Sink:
    """Appends received record lines to ``records.jsonl`` (one write per batch), each key once."""

    def __init__(self, path: str, done: dict):
        self.path, self.seen, self.duplicates = path, set(done), 0

    def write(self, lines: list[tuple[str, bool, bytes]]) -> int:
        """Append the lines not written yet; returns how many of them are measured (not warmup)."""
        fresh, measured = [], 0
        for key, warmup, line in lines:
            if key in self.seen:
                self.duplicates += 1
                continue
            self.seen.add(key)
            fresh.append(line + b"\n")
            measured += not warmup
        if fresh:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(b"".join(fresh))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        return measured


class RayWorkerPool:
    """``workers`` actors on the cluster at ``address`` for the whole run (``close`` when done): the
    executor of ``--ray`` (``executor.Executor``)."""

    def __init__(self, address: str, workers: int, tokenizer_path: str, out: str, log=print,
                 cpus_per_worker: float = 1.0):
        if workers < 1:
            raise RayClusterError(f"--workers {workers}: need at least 1")
        self.address, self.size, self.out, self.log, self.cpus = address, workers, Path(out), log, cpus_per_worker
        self.ray, self._started = connect(address)
        self.actors: list[_Actor] = []
        self._tag = uuid.uuid4().hex[:8]
        self._tokenizer = {name: (Path(tokenizer_path) / name).read_bytes() for name in TOKENIZER_FILES
                           if (Path(tokenizer_path) / name).is_file()}
        self._boot_id = boot_id()
        self._report = {"measured_unix_s": time.time(), "driver": {"hostname": socket.gethostname(),
                        "boot_id": self._boot_id}, "address": address, "max_offset_s": MAX_CLOCK_OFFSET_S,
                        "max_uncertainty_s": MAX_CLOCK_UNCERTAINTY_S, "workers": []}
        try:
            self._place()
            for index in range(workers):
                self.actors.append(self._spawn(index))
        except BaseException:
            self.close()
            raise
        self._write_clock_report()

    def _place(self) -> None:
        from ray.util.placement_group import placement_group

        total = self.ray.cluster_resources().get("CPU", 0)
        if total < self.size * self.cpus:
            raise RayClusterError(f"Ray cluster at {self.address} has {total:g} CPUs, --workers {self.size} needs "
                                  f"{self.size * self.cpus:g} (one per worker)")
        self.group = placement_group([{"CPU": self.cpus}] * self.size, strategy="SPREAD")
        try:
            self.ray.get(self.group.ready(), timeout=READY_TIMEOUT_S)
        except self.ray.exceptions.GetTimeoutError as error:
            raise RayClusterError(f"Ray cluster at {self.address}: {self.size} workers of {self.cpus:g} CPU not "
                                  f"placed within {READY_TIMEOUT_S:g} s (available: "
                                  f"{self.ray.available_resources()})") from error

    def _spawn(self, index: int, timeout_s: float = READY_TIMEOUT_S) -> _Actor:
        """Start actor ``index`` in its bundle, check its version and clocks."""
        import speedbench
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        handle = self.ray.remote(PhaseWorker).options(
            name=f"{ACTOR_PREFIX}{self._tag}-{index}", namespace=NAMESPACE, num_cpus=self.cpus,
            max_concurrency=4, max_restarts=0, max_task_retries=0,
            scheduling_strategy=PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=index),
        ).remote(self._tokenizer)
        try:
            info = self.ray.get(handle.describe.remote(), timeout=timeout_s)
        except Exception as error:
            self.ray.kill(handle)
            raise RayClusterError(f"Ray worker {index} on the cluster at {self.address} did not start: "
                                  f"{type(error).__name__}: {error}") from error
        where = f"Ray worker {index} on {info['hostname']} ({info['node_ip']})"
        if info["version"] != speedbench.__version__:
            raise RayClusterError(f"{where} has speed-bench {info['version']}, the driver {speedbench.__version__}; "
                                  f"install the same version on every node")
        clock = estimate_clock(self._probes(handle), same_host=info["boot_id"] == self._boot_id)
        try:
            check_clock(clock, where)
        except ClockOffsetError as error:
            raise RayClusterError(str(error)) from error
        entry = {"worker": index, **{k: info[k] for k in ("hostname", "node_id", "node_ip", "pid")}, **clock.to_dict()}
        self._report["workers"].append(entry)
        return _Actor(index, handle, info, clock, entry)

    def _probes(self, handle) -> list[tuple[int, int, int, int, int, int]]:
        probes = []
        for _ in range(CLOCK_PROBES):
            t0, m0 = time.time_ns(), time.perf_counter_ns()
            wall, mono = self.ray.get(handle.clock.remote(), timeout=READY_TIMEOUT_S)
            m1, t1 = time.perf_counter_ns(), time.time_ns()
            probes.append((t0, m0, wall, mono, t1, m1))
        return probes

    def _write_clock_report(self) -> None:
        """Append this invocation's estimates to ``manifest.json`` (``clock_offsets``, one entry per invocation)."""
        path = self.out / MANIFEST_NAME
        manifest = json.loads(path.read_text())
        entries = [e for e in manifest.get("clock_offsets", []) if e.get("measured_unix_s") !=
                   self._report["measured_unix_s"]]
        manifest["clock_offsets"] = entries + [self._report]
        path.write_text(json.dumps(manifest, indent=2) + "\n")

    def _replace_dead(self) -> None:
        """A new actor in each dead one's bundle; one that does not start leaves the others to go on."""
        for position, actor in enumerate(self.actors):
            if actor.alive:
                continue
            try:
                self.actors[position] = self._spawn(actor.index, timeout_s=REPLACE_TIMEOUT_S)
            except RayClusterError as error:
                self.log(f"warning: Ray worker {actor.index} not replaced ({error}); going on with "
                         f"{sum(a.alive for a in self.actors)} worker(s)")
                continue
            self.log(f"warning: Ray worker {actor.index} replaced, now on {self.actors[position].info['hostname']}")
            self._write_clock_report()

    def run_phase(self, settings: ClientSettings, phase: PhaseSpec, conversations: list[Conversation],
                  progress=None) -> int:
        """Run one phase on the actors; returns how many conversations were rerun after an actor died."""
        self._replace_dead()
        sink = _Sink(settings.records_path, phase.done)
        live = [a for a in self.actors if a.alive]
        if not live:
            raise RayClusterError(f"no Ray worker left on the cluster at {self.address} for {phase.run_point}; "
                                  f"finished records are in {settings.records_path}, rerun the same command to resume")
        shares = {live[w].index: (p, mine) for w, p, mine in partition_phase(phase, conversations, len(live))}
        result = self._run_round(settings, shares, sink, progress)
        reran = 0
        for _ in range(MAX_RERUNS):
            if not result.lost or result.budget:
                break
            again = self._rerun_shares(settings, phase, result.lost)
            reran += sum(len(mine) for _, mine in again.values())
            budget, failures = result.budget, result.failures
            result = self._run_round(settings, again, sink, progress)
            result.budget, result.failures = budget + result.budget, failures + result.failures
        if sink.duplicates:
            self.log(f"warning: {sink.duplicates} record(s) received twice from Ray workers were written once")
        if result.budget:
            raise ErrorBudgetExceeded(result.budget[0])
        if result.lost:
            reasons = "; ".join(f"worker {i}: {why}" for i, (_, _, why) in result.lost.items())
            raise RayClusterError(f"Ray workers lost at {phase.run_point} ({reasons}) and {MAX_RERUNS} reruns did "
                                  f"not finish their requests; finished records are in {settings.records_path}, "
                                  f"rerun the same command to resume")
        if result.failures:
            raise RuntimeError("; ".join(result.failures))
        return reran

    def _rerun_shares(self, settings: ClientSettings, phase: PhaseSpec, lost: dict) -> dict:
        """The lost shares' conversations with a missing request-turn, split over the live actors."""
        done, done_ids = done_maps(load_existing(settings.records_path))
        todo: list[tuple[int, Conversation]] = []
        slots = 0
        for index, (share, mine, why) in lost.items():
            offsets = share.arrival_offsets_ns or [0] * len(mine)
            missing = [(offset, c) for offset, c in zip(offsets, mine) if any(record_key(
                phase.run_point, c.question_id, t, phase.warmup) not in done for t in range(len(c.turns)))]
            self.log(f"warning: Ray worker {index} lost ({why}); rerunning the {len(missing)} conversation(s) it "
                     f"had not finished on the other workers")
            todo += missing
            slots += share.slots
        todo.sort(key=lambda item: item[0])
        live = [a for a in self.actors if a.alive]
        if not todo:
            return {}
        if not live:
            reasons = "; ".join(why for _, _, why in lost.values())
            raise RayClusterError(f"every Ray worker was lost at {phase.run_point} ({reasons}); "
                                  f"finished records are in {settings.records_path}, rerun the same command to resume")
        first = todo[0][0]
        rerun = replace(phase, done=done, done_ids=done_ids,
                        arrival_offsets_ns=[o - first for o, _ in todo] if phase.arrival_offsets_ns else None)
        parts = partition_phase(rerun, [c for _, c in todo], len(live), concurrency=slots)
        return {live[w].index: (p, mine) for w, p, mine in parts}

    def _run_round(self, settings: ClientSettings, shares: dict, sink: _Sink, progress) -> _Round:
        result = _Round()
        actors = {a.index: a for a in self.actors}
        start = time.perf_counter_ns() + int(RAY_START_DELAY_S * 1e9)
        starts = {}
        for index, (share, mine) in shares.items():
            actor = actors[index]
            share = replace(share, start_ns=start - actor.clock.shift_ns)  # the common start, on its clock
            starts[index] = (actor.handle.start.remote(settings, share, mine, index, actor.clock.shift_ns,
                                                        0 if actor.clock.same_host else actor.clock.offset_ns),
                             share, mine)
        pending, errors, seen = {}, {}, {}
        for index, (ref, share, mine) in starts.items():
            try:
                late_ns = self.ray.get(ref) - share.start_ns
            except Exception as error:
                self._lose(actors[index], result, share, mine, error)
                continue
            if late_ns > 0:
                self.log(f"warning: Ray worker {index} got its start {late_ns / 1e6:.0f} ms late; its first requests "
                         f"count that delay against their TTFT")
            pending[actors[index].handle.poll.remote(0, 0)] = (index, share, mine)
            errors[index], seen[index] = 0, time.monotonic()
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=5.0)
            if not ready:
                for index, _, _ in pending.values():
                    if time.monotonic() - seen[index] > STALL_S:
                        self.ray.kill(actors[index].handle)  # its poll then fails: counted as lost
                continue
            index, share, mine = pending.pop(ready[0])
            try:
                reply = self.ray.get(ready[0])
            except Exception as error:
                self._lose(actors[index], result, share, mine, error)
                continue
            seen[index], errors[index] = time.monotonic(), reply["errors"]
            measured = sink.write(reply["lines"])
            if progress is not None and measured:
                progress.update(measured)
            if reply["status"] == "running":
                elsewhere = sum(n for i, n in errors.items() if i != index)
                pending[actors[index].handle.poll.remote(reply["offset"], elsewhere)] = (index, share, mine)
            elif reply["status"] == "budget":
                result.budget.append(reply["message"])
            elif reply["status"] == "error":
                result.failures.append(f"Ray worker {index} on {actors[index].info['hostname']}: {reply['message']}")
        return result

    def _lose(self, actor: _Actor, result: _Round, share: PhaseSpec, mine: list[Conversation], error) -> None:
        actor.alive = False
        try:
            self.ray.kill(actor.handle)
        except Exception:  # already gone
            pass
        result.lost[actor.index] = (share, mine, f"{type(error).__name__} on {actor.info['hostname']}")

    def _probe_end(self) -> None:
        """The live actors' clocks probed again: their drift over the run goes into the manifest."""
        for actor in self.actors:
            try:
                end = estimate_clock(self._probes(actor.handle), actor.clock.same_host) if actor.alive else None
            except Exception:  # lost at the very end: its records are in already
                end = None
            if end is None:
                continue
            drift = end.measured_shift_ns - actor.clock.measured_shift_ns
            actor.entry.update(end=end.to_dict(), drift_ns=drift)
            if abs(drift) > actor.clock.uncertainty_ns + end.uncertainty_ns + MAX_CLOCK_UNCERTAINTY_S * 1e9:
                self.log(f"warning: Ray worker {actor.index}'s clock drifted {drift / 1e6:+.1f} ms against the "
                         f"driver's during the run; spans across workers are off by up to that")
        self._write_clock_report()

    def close(self) -> None:
        """Probe the clocks once more, kill the actors (after they removed their files), free the
        placement group, leave the cluster (if this pool joined it)."""
        if self.actors:
            self._probe_end()
        cleanups = [a.handle.cleanup.remote() for a in self.actors if a.alive]
        try:
            self.ray.wait(cleanups, num_returns=len(cleanups), timeout=10.0)
        except Exception:  # a dead actor: nothing to clean
            pass
        for actor in self.actors:
            try:
                self.ray.kill(actor.handle)
            except Exception:  # already dead
                pass
        group = getattr(self, "group", None)
        if group is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(group)
        if self._started:
            self.ray.shutdown()
