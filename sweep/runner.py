"""Running a plan: one variant's server at a time, every unit against it, resumable.

For each variant with unfinished units: start its server (or check the URL), record what it is,
run each unfinished unit with the measurement client (``execute_run``, which resumes a run folder
request by request), stop the server and check it is gone. A server that does not start, or
dies during a run, is reported with its log's last lines and the sweep goes on with the next
variant; the failed requests of that run are set aside so that rerunning the same command runs
them again. Ctrl-C stops the server, sets the interrupted requests aside the same way and exits.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from speedbench.sweep.plan import Plan, PlanError, Variant
from speedbench.sweep.progress import SweepProgress
from speedbench.sweep.records import drop_failed_since, records_size
from speedbench.sweep.server import (
    ExternalServer,
    ServerProcess,
    ServerStartError,
    describe_server,
    metrics_text,
    stop_tree,
    write_json,
)
from speedbench.sweep.state import SweepState
from speedbench.sweep.units import Unit, check_units, plan_units, unit_inputs, unit_sha256

SERVERS_DIR = "servers"
ENGINE_NAME = "engine.json"  # read by speedbench.report (speculation, K, label)


@dataclass
class SweepOutcome:
    out: Path
    units: list[Unit]
    finished: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # variant or unit -> why
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


def preflight(plan: Plan, units: list[Unit], out: Path) -> None:
    """What can be checked before any server starts: run options, datasets, tokenizer, and that
    the run folders already in ``out`` were measured as the plan says (``resume.check_resume``)."""
    from speedbench.client.data.workload import WorkloadError, config_files, resolve_dataset
    from speedbench.sweep.resume import check_resume
    from speedbench.tokenization.target import TokenizerError, load_tokenizer

    check_units(plan, units)
    try:  # as `speedbench run --tokenizer` takes it: a folder, or a Hub model id in the local cache
        load_tokenizer(plan.tokenizer, online=any(u.values(plan).get("online") for u in units))
    except (TokenizerError, OSError, ValueError) as error:
        raise PlanError(f"{plan.path}: tokenizer: {error}") from None
    for workload in plan.workloads:
        online = bool(plan.run.get("online") or workload.run.get("online"))
        try:
            folder = resolve_dataset(workload.dataset, workload.config, online)
            if not config_files(folder, workload.config):
                raise WorkloadError(f"no data files for config {workload.config!r} in {folder}")
        except (WorkloadError, ValueError, OSError) as error:
            raise PlanError(f"{plan.path}: workload {workload.name!r}: dataset {workload.dataset!r}, config "
                            f"{workload.config!r}: {error}") from None
    check_resume(plan, units, out)


def reap_leftovers(state: SweepState, log: Callable[[str], None]) -> None:
    """Servers an earlier invocation started and never saw gone (it was killed): stop them now."""
    for entry in state.unfinished_servers():
        outcome = stop_tree(int(entry["pid"]), entry.get("create_time"), 10.0)
        if outcome["processes"]:
            log(f"stopped a server left by an earlier, interrupted sweep: variant {entry['variant']!r} "
                f"pid {entry['pid']} ({outcome['processes']} processes)")
        state.add("server_stopped", server_id=entry.get("server_id"), variant=entry.get("variant"),
                  gone=outcome["gone"], leftover=True, **{k: v for k, v in outcome.items() if k != "gone"})


def write_engine_json(unit: Unit, server_info: dict[str, Any]) -> None:
    v = unit.variant
    description = server_info.get("description") or {}
    label = v.name if unit.workload.repeats == 1 else f"{v.name} r{unit.repeat}"
    write_json(unit.run_dir / ENGINE_NAME, {
        "label": label, "variant": v.name, "engine": v.engine, "speculation": v.method,
        "draft_length": v.k, "baseline": v.baseline, "gpus": v.gpus, "drafter": v.drafter, "family": v.family,
        "schedule": v.schedule, "draft_schedule": server_info.get("draft_schedule"),
        "engine_version": description.get("engine_version"), "command": server_info.get("command"),
        "url": server_info.get("url"), "workload": unit.workload.name, "repeat": unit.repeat})


class SweepRunner:
    def __init__(self, plan: Plan, out: Path, progress: bool = True, log: Callable[[str], None] = print,
                 retry_errors: bool = False):
        self.plan, self.out, self.log = plan, Path(out), log
        self.retry_errors = retry_errors  # finished units with retryable failed records run again
        self.units = plan_units(plan, self.out)
        self.show_progress = progress
        self.outcome = SweepOutcome(out=self.out, units=self.units)

    def run(self) -> SweepOutcome:
        preflight(self.plan, self.units, self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        state = SweepState(self.out)
        reap_leftovers(state, self.log)
        (self.out / "plan.toml").write_text(self.plan.text, encoding="utf-8")
        state.add("invocation", plan=str(self.plan.path), plan_sha256=self.plan.sha256)
        options = {u.unit_id: u.options(self.plan, "") for u in self.units}
        hashes = {u.unit_id: unit_sha256(self.plan, u) for u in self.units}
        pending = [u for u in self.units if not state.unit_done(u.unit_id, hashes[u.unit_id], u.run_dir)
                   or (self.retry_errors and retryable(u.run_dir, options[u.unit_id].retry_kinds))]
        total = sum(len(o.points()) for o in options.values())
        todo_points = sum(len(options[u.unit_id].points()) for u in pending)
        self.progress = SweepProgress(total, total - todo_points, self.show_progress)
        self.outcome.finished = [u.unit_id for u in self.units if u not in pending]
        started = time.monotonic()
        try:
            for variant in self.plan.variants:
                mine = [u for u in pending if u.variant == variant]
                if mine:
                    self._variant(variant, mine, state, hashes)
        finally:
            self.progress.close()
            self.outcome.timings["sweep_s"] = time.monotonic() - started
        return self.outcome

    # -- one variant -------------------------------------------------------------------------
    def _variant(self, variant: Variant, units: list[Unit], state: SweepState, hashes: dict[str, str]) -> None:
        attempt = state.attempts(variant.name) + 1
        folder = self.out / SERVERS_DIR / variant.name
        server_id = f"{variant.name}#{attempt}"
        state.add("server_attempt", server_id=server_id, variant=variant.name)
        self.progress.write(f"== variant {variant.name} ({variant.engine}, {variant.method}"
                            f"{f', K={variant.k}' if variant.speculative else ''}): {len(units)} runs to do")
        served, derived = variant, None
        if variant.schedule:
            served, derived = self._scheduled(variant, state)
            if served is None:
                return
        server = self._start(served, state, server_id, folder / f"attempt-{attempt}.log")
        if server is None:
            return
        info: dict[str, Any] = {"url": server.url, "pid": server.pid, "attempt": attempt, **(derived or {})}
        metrics_path = self._metrics_path(variant.engine)
        try:
            info.update(describe_server(server, variant.engine), attempt=attempt,
                        start_s=getattr(server, "start_s", None), unix_s=time.time())
            self._write_metrics(folder, attempt, "before", metrics_text(server.url + metrics_path) if metrics_path else None)
            self.progress.write(f"   server {server.url} (pid {server.pid}), "
                                f"{info['description'].get('engine_version') or 'version not reported'}")
            for unit in units:
                if not server.alive():
                    self._server_died(server, unit, None, state)
                    break
                if not self._unit(unit, server, info, state, hashes[unit.unit_id]):
                    break
        finally:
            after = metrics_text(server.url + metrics_path) if metrics_path and server.alive() else None
            self._write_metrics(folder, attempt, "after", after)
            info["stop"] = stopped = server.stop()
            write_json(folder / f"attempt-{attempt}.json", info)
            if server.pid:
                state.add("server_stopped", server_id=server_id, variant=variant.name, gone=stopped.get("gone"))
                if not stopped.get("gone"):
                    self.outcome.failed[variant.name] = f"server not gone after stop: {stopped}"
                    self.log(f"warning: variant {variant.name}: server processes survived the stop: {stopped}")

    def _scheduled(self, variant: Variant, state: SweepState) -> tuple[Variant | None, dict | None]:
        """The variant with ``{schedule}`` filled from its family's finished runs (``speedbench.sweep.schedule``);
        (None, None), reported, when they cannot give one."""
        from dataclasses import replace

        from speedbench.sweep.schedule_substitution import fill_schedule

        try:
            command, derived = fill_schedule(self.plan, variant, self.out)
        except ValueError as error:
            self._fail(variant.name, f"no schedule from {variant.schedule!r}: {error}", state,
                       event="server_failed", variant=variant.name)
            return None, None
        state.add("schedule_derived", variant=variant.name, **derived)
        self.progress.write(f"   schedule from {variant.schedule} ({derived['schedule_workload']}): "
                            f"{derived['draft_schedule']}")
        return replace(variant, command=command), derived

    def _start(self, variant: Variant, state: SweepState, server_id: str, log_path: Path):
        """The variant's server, healthy; None (reported) when it did not come up."""
        server = ExternalServer(variant) if variant.url else ServerProcess(variant, log_path)
        if not variant.url and variant.port is None:
            # The client resumes a run folder only against the same URL: a variant keeps the port
            # it was first given.
            server.port = state.port_of(variant.name)

        def spawned(process) -> None:
            state.add("server_started", server_id=server_id, variant=variant.name, pid=process.pid,
                      create_time=process.create_time, url=process.url, port=process.port, command=process.argv)

        t0 = time.monotonic()
        try:
            server.start(on_spawn=spawned)
        except ServerStartError as error:
            if server.pid:
                state.add("server_stopped", server_id=server_id, variant=variant.name,
                          gone=server.last_stop.get("gone"))
            self._fail(variant.name, str(error), state, event="server_failed", variant=variant.name)
            return None
        self.outcome.timings.setdefault("server_start_s", {})[server_id] = time.monotonic() - t0
        return server

    def _unit(self, unit: Unit, server, info: dict, state: SweepState, sha: str) -> bool:
        """Run one unit; False when the server died (the variant's remaining units wait)."""
        from speedbench.client.execution.phase import ErrorBudgetExceeded
        from speedbench.client.run.runner import execute_run

        options = unit.options(self.plan, server.url)
        options.progress = self.show_progress
        options.retry_errors = options.retry_errors or self.retry_errors
        unit.run_dir.mkdir(parents=True, exist_ok=True)
        write_engine_json(unit, info)
        state.add("unit_started", unit=unit.unit_id, inputs=unit_inputs(self.plan, unit))
        offset = records_size(unit.run_dir)
        points = [p[0] for p in options.points()]
        counted = self.progress.counted()
        label = f"{unit.variant.name} · {unit.workload.name} · r{unit.repeat}"
        self.progress.watch(label, unit.run_dir / "records.jsonl", points, set())
        t0 = time.monotonic()
        try:
            execute_run(options, log=lambda text: self.progress.write(f"   {unit.unit_id}: {text}"))
        except KeyboardInterrupt:
            dropped = drop_failed_since(unit.run_dir, offset)
            state.add("unit_interrupted", unit=unit.unit_id, dropped_failed_records=dropped)
            raise
        except ErrorBudgetExceeded as error:
            if not server.alive():
                self._server_died(server, unit, offset, state)
                return False
            self._fail(unit.unit_id, f"error budget exceeded: {error}", state, event="unit_failed", unit=unit.unit_id)
            return True
        except Exception as error:  # a run that cannot proceed: report it, go on with the next
            if not server.alive():
                self._server_died(server, unit, offset, state)
                return False
            self._fail(unit.unit_id, f"{type(error).__name__}: {error}", state, event="unit_failed",
                       unit=unit.unit_id)
            return True
        finally:
            self.progress.unit_finished(0)
        self.progress.unit_finished(len(points) - (self.progress.counted() - counted))
        if not server.alive():
            # The run ended within its error budget, but the server is gone: requests that failed
            # since this unit started failed because of it (they run again next time); a unit
            # without any stands.
            if self._server_died(server, unit, offset, state):
                return False
            state.add("unit_done", unit=unit.unit_id, inputs_sha256=sha, seconds=time.monotonic() - t0)
            self.outcome.finished.append(unit.unit_id)
            return False
        state.add("unit_done", unit=unit.unit_id, inputs_sha256=sha, seconds=time.monotonic() - t0)
        self.outcome.finished.append(unit.unit_id)
        return True

    def _server_died(self, server, unit: Unit | None, offset: int | None, state: SweepState) -> int:
        """Report the death; set the unit's failed requests aside; returns how many."""
        dropped = drop_failed_since(unit.run_dir, offset) if unit is not None and offset is not None else 0
        where = f" during {unit.unit_id}" if unit else ""
        message = (f"variant {server.variant.name!r}: the server died{where}; {dropped} failed requests set aside "
                   f"to run again on the next invocation\n--- last lines of the server log ---\n{server.log_tail()}")
        self._fail(server.variant.name, message, state, event="server_died", variant=server.variant.name,
                   unit=unit.unit_id if unit else None, dropped_failed_records=dropped)
        return dropped

    def _fail(self, key: str, message: str, state: SweepState, event: str, **fields) -> None:
        self.outcome.failed[key] = message
        state.add(event, message=message[-6000:], **fields)
        self.progress.write(f"FAILED {key}: {message}")

    @staticmethod
    def _metrics_path(engine: str) -> str | None:
        from speedbench.client.engines import get_adapter

        return get_adapter(engine).metrics_path

    @staticmethod
    def _write_metrics(folder: Path, attempt: int, when: str, text: str | None) -> None:
        if text is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"attempt-{attempt}.metrics-{when}.prom").write_text(text, encoding="utf-8")


def retryable(run_dir: Path, kinds) -> bool:
    """Whether a run folder holds request-turns that ``--retry-errors`` would run again."""
    from speedbench.client.recording.writer import load_existing
    from speedbench.client.run.retry import retry_keys

    path = run_dir / "records.jsonl"
    return path.exists() and bool(retry_keys(load_existing(path), kinds))


def run_sweep(plan: Plan, out: str | Path, progress: bool = True, log: Callable[[str], None] = print,
              retry_errors: bool = False) -> SweepOutcome:
    return SweepRunner(plan, Path(out), progress, log, retry_errors).run()
