"""What was measured, independent of how it was packed: the board's duplicate check.

A bundle's *measurement digest* hashes a canonical form of its runs: each run's dataset config
and fingerprint, engine and role, and each measured, successful request-turn's ids (question id,
turn), token counts (prompt, output, every chunk, the engine's counts) and times relative to that
request's own scheduled time. It does not see file or folder names, member order, JSON
formatting, line order, a shift of every time, ``results.json`` or ``submission.json``, nor
warmup or failed requests and load-point labels (``c16`` renamed ``c17`` measures the same
requests), so a renamed, re-packed, re-formatted, padded, re-labelled or time-shifted copy of the
same measurement is recognised.
The *token digest* leaves the times out too: two entries with the same one measured the very
same token streams (shown as a warning, since a rerun of a deterministic setup may do so).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from speedbench.analysis.run_folder import RunFolder

# 2: warmup and failed requests and load-point labels left out (version 1 hashed them)
DIGEST_VERSION = 2


def _stats(record) -> list | None:
    s = record.engine_stats
    if s is None:
        return None
    return [s.source, s.verify_steps, s.draft_tokens, s.accepted_tokens, s.acceptance_histogram, s.draft_length,
            getattr(s, "decode_steps", None), getattr(s, "drafted_steps", None)]


def _record_lines(record) -> tuple[str, str]:
    """(canonical line with times, without times) of one request-turn (hashed at once by the
    callers: a run's lines together are as large as its records, its hashes 64 bytes a record)."""
    form = [record.question_id, record.turn_index, record.num_turns, record.prompt_tokens,
            record.output_tokens, list(record.chunk_tokens), record.finish_reason, _stats(record)]
    start = record.scheduled_ns
    times = [record.send_ns - start, record.end_ns - start,
             (np.asarray(record.chunk_ns, dtype=np.int64) - start).tolist()]
    plain = json.dumps(form, separators=(",", ":"))
    return plain[:-1] + "," + json.dumps(times, separators=(",", ":"))[1:], plain


@dataclass(frozen=True)
class RunDigests:
    """One run's digests: with times (duplicates), without times (same token streams), and
    with times but without its role (a baseline that is an SD run)."""

    timed: str
    tokens: str
    roleless: str


def _digest(head: list, hashes: list[bytes]) -> str:
    digest = hashlib.sha256(json.dumps(head, separators=(",", ":")).encode("utf-8"))
    for value in hashes:
        digest.update(value)
    return digest.hexdigest()


def _line_hashes(record) -> tuple[bytes, bytes]:
    timed, plain = _record_lines(record)
    return hashlib.sha256(timed.encode("utf-8")).digest(), hashlib.sha256(plain.encode("utf-8")).digest()


def run_digests(run: RunFolder) -> RunDigests:
    """Over the sorted hashes of the run's lines (order-free, and never all lines in memory at once)."""
    pairs = [_line_hashes(r) for r in run.records]
    timed, plain = sorted(p[0] for p in pairs), sorted(p[1] for p in pairs)
    tail = [run.manifest.engine, run.manifest.dataset_config, run.manifest.dataset_config_sha256]
    return RunDigests(timed=_digest([run.role, *tail], timed), tokens=_digest([run.role, *tail], plain),
                      roleless=_digest([None, *tail], timed))


def _relative_times(record) -> np.ndarray:
    start = record.scheduled_ns
    return np.concatenate(([record.send_ns - start], np.asarray(record.chunk_ns, dtype=np.int64) - start,
                           [record.end_ns - start])).astype(np.int64)


def request_timings(run: RunFolder) -> dict[bytes, list[np.ndarray]]:
    """Each request-turn's times relative to its scheduled send (send, every chunk, end), keyed by a
    16-byte hash of its canonical line without times (its question, turn and token streams)."""
    found: dict[bytes, list[np.ndarray]] = {}
    for record in run.records:
        found.setdefault(_line_hashes(record)[1][:16], []).append(_relative_times(record))
    return found


def copied_requests(run: RunFolder, timings: dict[bytes, list[np.ndarray]], relative: float,
                    absolute_ns: int) -> int:
    """How many of ``run``'s request-turns are copies of one in ``timings`` (:func:`request_timings`
    of other runs): the same token streams, and every time within ``max(absolute_ns, relative x
    the time)`` of that request's. A rerun measures its own times: even a deterministic engine's
    streams reach the client microseconds apart; a copy with new timestamps or a few nudged
    values keeps the rest of the original's timing (:mod:`.verify`)."""
    count = 0
    for record in run.records:
        mine = _relative_times(record)
        for other in timings.get(_line_hashes(record)[1][:16], ()):
            allowed = np.maximum(absolute_ns, relative * np.abs(other))
            if len(other) == len(mine) and bool(np.all(np.abs(mine - other) <= allowed)):
                count += 1
                break
    return count


def measurement_digest(digests: list[RunDigests], with_times: bool = True) -> str:
    """sha256 over the sorted run digests: the same measurement gives the same digest however packed."""
    parts = sorted(d.timed if with_times else d.tokens for d in digests)
    return hashlib.sha256("\n".join(parts).encode("ascii")).hexdigest()
