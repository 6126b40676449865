"""Prometheus text exposition: scrape an engine's counters and take deltas around a load point.

The text is parsed with ``prometheus_client.parser`` (the maintained parser: escaping, ``# TYPE``
families, exemplars). Kept: counter samples (``*_total``), gauges and the ``_sum`` / ``_count`` of
histograms and summaries; dropped: histogram buckets and every ``*_created`` sample (vLLM
exposes a ``*_created`` gauge, a Unix timestamp, beside every counter, also with the same
``position`` labels). Samples are summed over every label except ``position`` (data-parallel
servers label each engine), so a delta is a run-level total over the point; ``position``-labelled
samples are kept per metric name and position. Deltas are polluted by any other traffic on the
server; the results say so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from speedbench.metrics.acceptance.counter_sources import snapshot_delta



@dataclass
class CounterSnapshot:
    """Totals by metric name, and per-position totals for ``position``-labelled metrics."""

    totals: dict[str, float] = field(default_factory=dict)
    per_position: dict[str, dict[int, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"totals": self.totals,
                "per_position": {k: {str(p): v for p, v in d.items()} for k, d in self.per_position.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "CounterSnapshot":
        return cls(dict(data.get("totals", {})),
                   {k: {int(p): v for p, v in d.items()} for k, d in data.get("per_position", {}).items()})


def _kept(sample_name: str, family_type: str) -> bool:
    if sample_name.endswith("_created"):
        return False  # a creation timestamp, not a count
    if family_type in ("histogram", "gaugehistogram"):
        return sample_name.endswith(("_sum", "_count"))
    return True


def parse_prometheus(text: str) -> CounterSnapshot:
    """A snapshot of ``text``; a malformed exposition raises ``ValueError`` naming the problem."""
    snapshot = CounterSnapshot()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not _kept(sample.name, family.type) or math.isnan(sample.value):
                continue
            position = sample.labels.get("position")
            if position is None:
                snapshot.totals[sample.name] = snapshot.totals.get(sample.name, 0.0) + sample.value
                continue
            try:
                index = int(position)
            except ValueError:
                continue
            by_position = snapshot.per_position.setdefault(sample.name, {})
            by_position[index] = by_position.get(index, 0.0) + sample.value
    return snapshot


def counter_delta(before: CounterSnapshot, after: CounterSnapshot) -> tuple[dict[str, float], dict[int, float]]:
    """Differences after - before: (totals, per-position deltas of the accepted-per-position counter)
    (``speedbench.metrics.acceptance.counter_sources.snapshot_delta``, which reads saved snapshots too)."""
    return snapshot_delta(before.to_dict(), after.to_dict()) or ({}, {})


async def scrape(session, url: str) -> CounterSnapshot | None:
    """One scrape; None when the endpoint is missing (counters are then an absent source)."""
    import aiohttp

    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=15)) as response:
            if response.status != 200:
                return None
            return parse_prometheus(await response.text())
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None  # unreachable or not Prometheus text: counters are an absent source


async def describe_and_scrape(adapter, want_description: bool) -> tuple[dict | None, CounterSnapshot | None]:
    """The server's description (model id, version; when asked) and one counter snapshot (None
    when the engine exposes no metrics route)."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        description = await adapter.describe_server(session) if want_description else None
        snapshot = await scrape(session, adapter.url + adapter.metrics_path) if adapter.metrics_path else None
    return description, snapshot
