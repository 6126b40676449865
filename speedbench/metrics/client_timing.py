"""The client's own timing health: chunks that reached the client together, and records whose
timing is the client's rather than the engine's.

The client stamps every chunk when the network read that delivered it returns
(``speedbench.client.execution.stream``), so chunks of one read share one stamp. A client that
was descheduled (a busy machine, a blocked event loop) finds several events waiting and reads
them at once: their stamps say nothing about when the engine produced them. At worst a whole
answer arrives in one read and every chunk gets the same stamp ("47 tokens in 0.000000 ms"):
not an impossible engine, an unmeasured one.

- a chunk *shares a read* when its stamp equals the previous chunk's (``chunk_ns[i] == chunk_ns[i-1]``);
  their share is reported per load point: reads that carry several chunks blur the step times
  (a busy machine at 1 ms steps: about half the chunks), without erasing them;
- the event loop's lag: a task sleeps 5 ms again and again in each worker
  (``client/execution/loop_lag.py``); every record carries the largest lateness seen while it was
  in flight (``client_loop_lag_ns``), and each point reports its p50 / p99 / max over requests;
- a record is *client-lagged* when its decode has no timing left: all its token chunks after the
  first arrived in one read (at least two of them), or the whole record did, or its stamps put the
  tokens between its first and last chunk closer together than any engine decodes
  (``MAX_USER_TPS``, 20,000 tokens/s per user): the answer came in a burst of a few reads (a real
  vLLM n-gram answer of 47 tokens: 5 chunks in one read, 39 in the next 0.87 ms later, after the
  client's loop had been 426 ms late). Its inter-token times, its per-user speed and its end are
  those of the delivery, not the engine's. Mostly that is the client (its loop lag shows it); a
  server frontend that fell behind sends bursts too (a whole answer in one read with no loop lag).

Client-lagged records keep their tokens, outputs, acceptance (counts do not depend on time), TTFT
and E2E (measured from the scheduled send, these include the client's lateness by design), but are
left out of the step latency, TPOT and per-user speed figures, which report how many were left out
(``speedbench.analysis.run_results``). They are no impossible engine: the consistency rule
``bounds.user_tps`` (``speedbench.analysis.consistency``) counts from the request's send, which no delivery
can compress. The leaderboard refuses a bundle only when their share at a load point exceeds
``MAX_CLIENT_LAGGED_SHARE``.
"""
from __future__ import annotations

from dataclasses import dataclass

# The board refuses a load point whose client-lagged share of measured records is above this:
# its latency figures would rest on too few requests to stand for the point.
MAX_CLIENT_LAGGED_SHARE = 0.25
# No engine decodes faster than this for one user (the fastest served decode is a few thousand
# tokens/s); speedbench.analysis.consistency's physical bound and the burst test of client_lagged share it.
MAX_USER_TPS = 20_000.0


def shared_read_chunks(chunk_ns, chunk_tokens) -> int:
    """Token-carrying chunks after the first stamped the same as the token chunk before them."""
    stamps = [t for t, n in zip(chunk_ns, chunk_tokens) if n > 0]
    return sum(1 for a, b in zip(stamps, stamps[1:]) if a == b)


def client_lagged(record) -> bool:
    """Whether the record's decode timing is the delivery's, not the engine's: its token chunks after
    the first came in one read (two or more of them), every chunk did, or the tokens between its first
    and last chunk arrived faster than ``MAX_USER_TPS`` (module doc; the last chunk is left out of
    that count: one step's tokens arrive at once)."""
    stamps = [t for t, n in zip(record.chunk_ns, record.chunk_tokens) if n > 0]
    if len(stamps) < 2:
        return False
    if len(set(stamps)) == 1 or (len(stamps) >= 3 and len(set(stamps[1:])) == 1):
        return True
    between = sum(n for n in record.chunk_tokens if n > 0) - _first_and_last(record.chunk_tokens)
    return between > MAX_USER_TPS * (stamps[-1] - stamps[0]) / 1e9


def _first_and_last(chunk_tokens) -> int:
    tokens = [n for n in chunk_tokens if n > 0]
    return tokens[0] + tokens[-1]


@dataclass(frozen=True)
class ClientTiming:
    """One load point's client timing health (``to_dict`` is its ``results.json`` entry)."""

    num_records: int
    num_client_lagged: int
    num_chunks: int
    num_chunks_sharing_a_read: int
    num_records_in_one_read: int
    # the client's event-loop lag while each request was in flight (TurnRecord.client_loop_lag_ns)
    loop_lag_ms: dict | None = None

    @property
    def client_lagged_share(self) -> float | None:
        return self.num_client_lagged / self.num_records if self.num_records else None

    def to_dict(self) -> dict:
        return {"num_records": self.num_records, "num_client_lagged": self.num_client_lagged,
                "client_lagged_share": self.client_lagged_share, "num_chunks": self.num_chunks,
                "num_chunks_sharing_a_read": self.num_chunks_sharing_a_read,
                "num_records_in_one_read": self.num_records_in_one_read, "loop_lag_ms": self.loop_lag_ms,
                "chunks_sharing_a_read_share": (self.num_chunks_sharing_a_read / self.num_chunks
                                                if self.num_chunks else None)}


def client_timing(records) -> ClientTiming:
    """The health figures of the (successful, measured) records of one load point."""
    records = list(records)
    one_read = 0
    for r in records:
        stamps = {t for t, n in zip(r.chunk_ns, r.chunk_tokens) if n > 0}
        one_read += sum(1 for n in r.chunk_tokens if n > 0) >= 2 and len(stamps) == 1
    lags = sorted(r.client_loop_lag_ns for r in records if getattr(r, "client_loop_lag_ns", None) is not None)
    loop_lag = None
    if lags:  # per request: the largest lag while it was in flight; nearest-rank percentiles
        rank = lambda q: lags[min(len(lags) - 1, max(0, -(-len(lags) * q // 100) - 1))]  # noqa: E731
        loop_lag = {"requests": len(lags), "p50": rank(50) / 1e6, "p99": rank(99) / 1e6, "max": lags[-1] / 1e6}
    return ClientTiming(
        loop_lag_ms=loop_lag,
        num_records=len(records), num_client_lagged=sum(client_lagged(r) for r in records),
        num_chunks=sum(sum(1 for n in r.chunk_tokens if n > 0) for r in records),
        num_chunks_sharing_a_read=sum(shared_read_chunks(r.chunk_ns, r.chunk_tokens) for r in records),
        num_records_in_one_read=one_read)


def timed_records(records) -> tuple[list, list]:
    """``(kept, lagged)``: the records whose timing is the engine's, and the client-lagged ones."""
    kept, lagged = [], []
    for r in records:
        (lagged if client_lagged(r) else kept).append(r)
    return kept, lagged


__all__ = ["ClientTiming", "MAX_CLIENT_LAGGED_SHARE", "MAX_USER_TPS", "client_lagged", "client_timing",
           "shared_read_chunks", "timed_records"]
