"""Prometheus text exposition: scrape an engine's counters and take deltas around a load point.

Only ``name{labels} value`` sample lines matter here; ``# HELP`` / ``# TYPE`` comments are
skipped. Samples are summed over every label except ``position`` (data-parallel servers label
each engine), so a delta is a run-level total over the point. Deltas are polluted by any other
traffic on the server; the results say so.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass
class CounterSnapshot:
    """Totals by metric name, and per-position totals for ``*_per_pos*`` metrics."""

    totals: dict[str, float] = field(default_factory=dict)
    per_position: dict[str, dict[int, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"totals": self.totals,
                "per_position": {k: {str(p): v for p, v in d.items()} for k, d in self.per_position.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "CounterSnapshot":
        return cls(dict(data.get("totals", {})),
                   {k: {int(p): v for p, v in d.items()} for k, d in data.get("per_position", {}).items()})


def parse_prometheus(text: str) -> CounterSnapshot:
    snapshot = CounterSnapshot()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, labels, value_text = match.groups()
        try:
            value = float(value_text)
        except ValueError:
            continue
        if math.isnan(value):
            continue
        label_map = dict(_LABEL.findall(labels or ""))
        if "position" in label_map:
            try:
                position = int(label_map["position"])
            except ValueError:
                continue
            by_position = snapshot.per_position.setdefault(name, {})
            by_position[position] = by_position.get(position, 0.0) + value
        else:
            snapshot.totals[name] = snapshot.totals.get(name, 0.0) + value
    return snapshot


def counter_delta(before: CounterSnapshot, after: CounterSnapshot) -> tuple[dict[str, float], dict[int, float]]:
    """Differences after - before; returns (totals, accepted-per-position of the first per-pos metric)."""
    totals = {name: after.totals[name] - before.totals.get(name, 0.0) for name in after.totals}
    per_position: dict[int, float] = {}
    for name, positions in after.per_position.items():
        earlier = before.per_position.get(name, {})
        per_position = {p: v - earlier.get(p, 0.0) for p, v in positions.items()}
        break
    return totals, per_position


async def scrape(session, url: str) -> CounterSnapshot | None:
    """One scrape; None when the endpoint is missing (counters are then an absent source)."""
    import aiohttp

    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=15)) as response:
            if response.status != 200:
                return None
            return parse_prometheus(await response.text())
    except (aiohttp.ClientError, TimeoutError):
        return None
