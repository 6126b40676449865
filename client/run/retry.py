"""``--retry-errors``: which request-turns a resumed run measures again.

A plain resume runs only request-turns without a record: a failed request-turn has one, so a run
that met dropped connections or a restarted server could never become complete. With
``--retry-errors`` a resume also reruns, per conversation at each load point, the first measured
turn whose last record failed with a kind in ``--retry-kinds`` (by default
``settings.TRANSIENT_ERROR_KINDS``: the network or a busy server, not the request), and every
later turn of that conversation (recorded as ``skipped_after_error``: it could not run without
the failed turn's answer). A conversation whose first failure is permanent (a prompt over the
context: ``http_4xx``; ``malformed``; ``engine_error``) is left as it is unless its kind is
named. Warmup requests are never rerun.

The rerun appends new records; the failed ones stay in ``records.jsonl`` as history, superseded
(:mod:`speedbench.analysis.supersession`): each new record's ``supersedes`` is the number of
records of its key before it.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from speedbench.records import TurnRecord


def retry_keys(live: dict[str, TurnRecord], kinds: Iterable[str]) -> set[str]:
    """The record keys to run again: for each (point, conversation), from its first failed measured
    turn on, when that turn's ``error_kind`` is one of ``kinds``."""
    kinds = set(kinds)
    conversations: dict[tuple[str, str], list[TurnRecord]] = defaultdict(list)
    for record in live.values():
        if not record.warmup:
            conversations[(record.run_point, record.question_id)].append(record)
    keys: set[str] = set()
    for turns in conversations.values():
        turns.sort(key=lambda r: r.turn_index)
        first_failed = next((r for r in turns if not r.ok), None)
        if first_failed is None or first_failed.error_kind not in kinds:
            continue
        keys.update(r.record_key for r in turns if r.turn_index >= first_failed.turn_index and not r.ok)
    return keys


def forget(done: dict, done_ids: dict, keys: set[str]) -> None:
    """Drop ``keys`` from a phase's done maps (``processes.done_maps``): they run again."""
    for key in keys:
        done.pop(key, None)
        done_ids.pop(key, None)


__all__ = ["forget", "retry_keys"]
