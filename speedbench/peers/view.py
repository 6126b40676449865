"""The peer view of one load point: every peer's figures for the traffic our records hold.

``peer_views(records, engine, counter_entry)`` is what ``results.json`` and the report carry per
point (key ``peers``); ``speedbench compare`` sets it beside a peer's saved result.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from speedbench.peers import aiperf_bench, llamacpp_bench, sglang_bench, specdec_bench, vllm_bench
from speedbench.peers.common import measured_requests, request_from_record
from speedbench.records import TurnRecord

PEERS = {module.NAME: module for module in (vllm_bench, sglang_bench, llamacpp_bench, aiperf_bench, specdec_bench)}


def peer_views(records: Iterable[TurnRecord], engine: str, counter_entry: dict | None = None,
               count_tokens: Callable[[str], int] | None = None) -> dict[str, dict[str, Any]]:
    """Each peer's view of one load point's records (warmup and failed requests left out, as peers
    leave them out; failed ones are counted where a peer counts them)."""
    records = list(records)
    requests = measured_requests(records)
    failed = [request_from_record(r) for r in records if not r.ok and not r.warmup]
    views = {
        vllm_bench.NAME: vllm_bench.view(requests, engine, counter_entry),
        sglang_bench.NAME: sglang_bench.view(requests, engine),
        llamacpp_bench.NAME: llamacpp_bench.view(requests, engine, failed),
        aiperf_bench.NAME: aiperf_bench.view(requests, engine, count_tokens),
        specdec_bench.NAME: specdec_bench.view(requests, engine),
    }
    return {name: view.to_dict() for name, view in views.items()}


__all__ = ["PEERS", "peer_views"]
