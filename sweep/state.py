"""The sweep's own bookkeeping in ``OUT/state.jsonl``: append-only events, read back on resume.

One JSON line per event (a unit finished, a server started, failed, died or was stopped), each
appended with one ``write`` and flushed, so a sweep killed at any moment leaves complete lines
(a torn last line is ignored). A unit counts as finished when its ``unit_done`` event carries
the same inputs as the plan now gives it (``units.unit_sha256``) and its ``results.json`` exists: finished units
are never rerun and their variant's server is not even started. ``unit_started`` carries
the inputs themselves, so that a changed plan is compared with what a run folder was measured
with (``resume.check_resume``).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

STATE_NAME = "state.jsonl"


class SweepState:
    def __init__(self, out: Path):
        self.path = out / STATE_NAME
        self.events: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    self.events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # the torn last line of a killed sweep

    def add(self, event: str, **fields: Any) -> dict[str, Any]:
        entry = {"event": event, "unix_s": round(time.time(), 3), **fields}
        line = (json.dumps(entry, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        self.events.append(entry)
        return entry

    def unit_done(self, unit_id: str, inputs_sha256: str, run_dir: Path) -> bool:
        return (run_dir / "results.json").exists() and any(
            e["event"] == "unit_done" and e.get("unit") == unit_id and e.get("inputs_sha256") == inputs_sha256
            for e in self.events)

    def recorded_inputs(self, unit_id: str) -> dict[str, Any] | None:
        """The inputs (``units.unit_inputs``) the unit was last run with; None when it never ran
        (or ran under a sweep that did not record them)."""
        for e in reversed(self.events):
            if e.get("unit") == unit_id and e["event"] in ("unit_started", "unit_done") and "inputs" in e:
                return e["inputs"]
        return None

    def unfinished_servers(self) -> list[dict[str, Any]]:
        """Servers a previous invocation started and never recorded as stopped and gone."""
        stopped = {e.get("server_id") for e in self.events if e["event"] == "server_stopped" and e.get("gone")}
        return [e for e in self.events if e["event"] == "server_started" and e.get("server_id") not in stopped]

    def port_of(self, variant: str) -> int | None:
        """The port the variant's server was given the first time (None: never started)."""
        ports = [e["port"] for e in self.events if e["event"] == "server_started" and e.get("variant") == variant
                 and e.get("port")]
        return int(ports[0]) if ports else None

    def attempts(self, variant: str) -> int:
        return sum(1 for e in self.events if e["event"] == "server_attempt" and e.get("variant") == variant)
