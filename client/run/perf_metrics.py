"""TensorRT-LLM's per-request statistics, served apart from the stream (``/perf_metrics``), joined
onto the records they belong to after each phase.

The route is emptied by every GET, so it is read once per phase, after the phase's workers have
finished writing; records are matched by response id. A record that already has exact in-stream
statistics keeps them; an inexact in-stream proxy is kept under ``raw["stream"]``.
"""
from __future__ import annotations

from pathlib import Path

from speedbench.client.execution.processes import run_event_loop
from speedbench.client.recording.writer import rewrite_records
from speedbench.records import read_records


async def _fetch_request_stats(adapter) -> list | None:
    import aiohttp

    from speedbench.client.engines.base import get_json

    async with aiohttp.ClientSession() as session:
        return await get_json(session, adapter.url + adapter.perf_metrics_path)


def attach_request_stats(adapter, records_path: Path, draft_length: int | None) -> int:
    """Join the engine's separately served statistics onto ``records_path``'s records (rewritten in
    one ``os.replace``: old or new file, never half); returns how many records got them."""
    if not adapter.perf_metrics_path:
        return 0
    entries = adapter.request_stats_by_id(run_event_loop(_fetch_request_stats(adapter)))
    if not entries:
        return 0
    records = list(read_records(records_path))
    joined = 0
    for record in records:
        entry = entries.get(record.response_id or "")
        if entry is None or not record.ok or (record.engine_stats and record.engine_stats.exact):
            continue
        chunk_steps = sum(1 for t in record.chunk_tokens[1:] if t > 0) if record.chunks_are_steps else 0
        stats = adapter.stats_from_request_entry(entry, record.output_tokens, draft_length, chunk_steps)
        if stats is not None:
            if record.engine_stats is not None:
                stats.raw["stream"] = record.engine_stats.raw  # the inexact in-stream proxy, kept
            record.engine_stats = stats
            joined += 1
    if joined:
        rewrite_records(records_path, records)
    return joined
