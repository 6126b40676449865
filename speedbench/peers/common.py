"""What the peer modules share: a figure's definition, one load point's peer view, requests as peers see them.

A *peer view* is what another benchmark tool would print for the traffic we measured, computed from
our records by that tool's own definitions (each peer module cites the file and version it follows).
Each figure carries its mapping to our figures: ``same`` when the definitions agree (the numbers
must then be equal on the same traffic), otherwise ``differs`` says how.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from speedbench import engines
from speedbench.metrics.results import to_jsonable
from speedbench.records import TurnRecord

def own_engine(engine: str, view: str) -> bool:
    """Whether the peer view named ``view`` is ``engine``'s own tool (``EngineSpec.peer_view``): the
    figures only that tool reads from its engine (counters, statistics) need records of that engine."""
    spec = engines.REGISTRY.get(engine)
    return spec is not None and spec.peer_view == view


COUNT = "count"    # fixed by the traffic: equal on the same requests and outputs
TIMING = "timing"  # measured with a clock: two runs never agree exactly


@dataclass(frozen=True)
class Figure:
    """One figure a peer prints, and how it maps to ours.

    key: the peer's own name for it (its JSON key); definition: the peer's definition in our words;
    ours: the name of our figure measuring the same quantity (``docs/metrics.md``), None if we have
    none; same: whether the definitions agree; differs: what differs when they do not; kind: COUNT or
    TIMING; scale: the peer's value divided by ours when the definitions agree (100 for a percentage,
    1000 for milliseconds).
    """

    key: str
    definition: str
    ours: str | None = None
    same: bool = False
    differs: str = ""
    kind: str = COUNT
    scale: float = 1.0


@dataclass
class PeerView:
    """A peer's figures for one load point, computed from our records."""

    tool: str
    version: str
    source: str
    basis: str
    figures: dict[str, Any]
    per_category: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable({"tool": self.tool, "version": self.version, "source": self.source, "basis": self.basis,
                            "figures": self.figures, "per_category": self.per_category, "notes": self.notes})


@dataclass
class Request:
    """One request-turn as a client-side benchmark sees it (times in seconds, monotonic clock).

    Engine counts (accepted / draft_tokens / drafted_steps / decode_steps) are None when the record
    carries no engine statistics; ``histogram`` is h_0..h_K over drafted steps when reported.
    """

    question_id: str
    category: str
    turn_index: int
    ok: bool
    send_s: float
    end_s: float
    chunk_s: list[float]
    chunk_tokens: list[int]
    output_tokens: int
    finish_reason: str | None
    output_text: str = ""
    accepted: int | None = None
    draft_tokens: int | None = None
    drafted_steps: int | None = None
    decode_steps: int | None = None
    histogram: list[int] | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ttft_s(self) -> float | None:
        return self.chunk_s[0] - self.send_s if self.chunk_s else None

    @property
    def latency_s(self) -> float:
        return self.end_s - self.send_s


def request_from_record(record: TurnRecord) -> Request:
    stats = record.engine_stats
    # Peers stamp a request when they send it, not when a load shape meant to: send_ns, not scheduled_ns.
    return Request(
        question_id=record.question_id, category=record.category, turn_index=record.turn_index, ok=record.ok,
        send_s=record.send_ns / 1e9, end_s=record.end_ns / 1e9, chunk_s=[t / 1e9 for t in record.chunk_ns],
        chunk_tokens=list(record.chunk_tokens), output_tokens=int(record.output_tokens or 0),
        finish_reason=record.finish_reason, output_text=record.output_text or "",
        accepted=None if stats is None else stats.accepted_tokens,
        draft_tokens=None if stats is None else stats.draft_tokens,
        drafted_steps=None if stats is None else (stats.drafted_steps if stats.drafted_steps is not None
                                                  else stats.verify_steps),
        decode_steps=None if stats is None else stats.decode_steps,
        histogram=None if stats is None else stats.acceptance_histogram, raw=dict(stats.raw) if stats else {})


def measured_requests(records: Iterable[TurnRecord]) -> list[Request]:
    """The successful, non-warmup request-turns, in send order."""
    done = [request_from_record(r) for r in records if r.ok and not r.warmup]
    return sorted(done, key=lambda r: r.send_s)


def summary_ms(values_s, prefix: str, stats=("mean", "median", "p99")) -> dict[str, float | None]:
    """``{prefix}_{stat}_ms``: mean / median / std / pNN of seconds, in milliseconds (numpy's linear
    percentiles, as vLLM and SGLang compute theirs); None for an empty list."""
    arr = np.asarray(list(values_s), dtype=np.float64) * 1000.0
    out: dict[str, float | None] = {}
    for stat in stats:
        key = f"{stat}_{prefix}_ms"
        if arr.size == 0:
            out[key] = None
        elif stat == "mean":
            out[key] = float(arr.mean())
        elif stat == "median":
            out[key] = float(np.median(arr))
        elif stat == "std":
            out[key] = float(arr.std())
        else:
            out[key] = float(np.percentile(arr, float(stat[1:])))
    return out


def run_figures(done: list[Request], ends_s: list[float], series: dict[str, list[float]],
                stats: tuple[str, ...]) -> dict[str, Any]:
    """A serving benchmark's run figures: completed requests, output tokens, the duration from the
    first send to the last of ``ends_s`` (each tool ends a request its own way), throughputs, and
    each latency series summarised in ms (:func:`summary_ms`)."""
    duration = max(ends_s) - min(r.send_s for r in done)
    total = sum(r.output_tokens for r in done)
    out: dict[str, Any] = {"completed": len(done), "total_output_tokens": total, "duration": duration,
                           "output_throughput": total / duration if duration > 0 else None,
                           "request_throughput": len(done) / duration if duration > 0 else None}
    for name, values in series.items():
        out.update(summary_ms(values, name, stats))
    return out


def load_json(path: str | Path, what: str) -> Any:
    """A peer's saved JSON file; a ValueError naming the file and the tool when it is not readable JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not {what} ({error})") from error


def group_turns(requests: list[Request]) -> dict[str, list[Request]]:
    """Request-turns grouped by question_id (turns in order): a conversation as one sample."""
    groups: dict[str, list[Request]] = {}
    for request in sorted(requests, key=lambda r: (r.question_id, r.turn_index)):
        groups.setdefault(request.question_id, []).append(request)
    return groups


__all__ = ["COUNT", "TIMING", "Figure", "PeerView", "Request", "group_turns", "load_json", "measured_requests",
           "request_from_record", "run_figures", "summary_ms"]
