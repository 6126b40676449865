"""What was measured, independent of how it was packed: the board's duplicate check.

A bundle's *measurement digest* hashes a canonical form of its runs: each run's dataset config
and fingerprint, engine and role, and each request-turn's ids (load point, question id, turn),
token counts (prompt, output, every chunk, the engine's counts) and times relative to that
request's own scheduled time. It does not see file or folder names, member order, JSON
formatting, line order, a shift of every time, ``results.json`` or ``submission.json``, so a
renamed, re-packed, re-formatted or time-shifted copy of the same measurement is recognised.
The *token digest* leaves the times out too: two entries with the same one measured the very
same token streams (shown as a warning, since a rerun of a deterministic setup may do so).
"""
from __future__ import annotations

import hashlib
import json

from speedbench.leaderboard.records_adapter import RunData


def _stats(record) -> list | None:
    s = record.engine_stats
    if s is None:
        return None
    return [s.source, s.verify_steps, s.draft_tokens, s.accepted_tokens, s.acceptance_histogram, s.draft_length,
            getattr(s, "decode_steps", None), getattr(s, "drafted_steps", None)]


def _record_form(record, with_times: bool) -> list:
    form = [record.run_point, record.question_id, record.turn_index, record.num_turns, record.prompt_tokens,
            record.output_tokens, list(record.chunk_tokens), record.finish_reason, _stats(record)]
    if with_times:
        start = record.scheduled_ns
        form += [record.send_ns - start, record.end_ns - start, [t - start for t in record.chunk_ns]]
    return form


def run_digest(run: RunData, with_times: bool = True, with_role: bool = True) -> str:
    """sha256 of one run's canonical form (``with_role=False``: to spot a baseline that is an SD run)."""
    lines = sorted(json.dumps(_record_form(r, with_times), separators=(",", ":")) for r in run.records)
    head = json.dumps([run.role if with_role else None, run.manifest.engine, run.manifest.dataset_config, run.manifest.dataset_config_sha256,
                       run.num_errors, run.num_warmup], separators=(",", ":"))
    digest = hashlib.sha256(head.encode("utf-8"))
    for line in lines:
        digest.update(b"\n" + line.encode("utf-8"))
    return digest.hexdigest()


def measurement_digest(runs: list[RunData], with_times: bool = True) -> str:
    """sha256 over the sorted run digests: the same measurement gives the same digest however packed."""
    return hashlib.sha256("\n".join(sorted(run_digest(r, with_times) for r in runs)).encode("ascii")).hexdigest()
