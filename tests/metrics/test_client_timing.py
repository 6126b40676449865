"""Client timing health: chunks that reached the client in one read, client-lagged records (counted by hand)."""
from __future__ import annotations

import pytest

from speedbench.metrics.client_timing import client_lagged, client_timing, shared_read_chunks, timed_records
from speedbench.records import TurnRecord


MS = 1_000_000


def _record(stamps, tokens, key="c4/q/0", unit=MS) -> TurnRecord:
    """A record whose chunks arrive at ``stamps`` (in ``unit`` ns: milliseconds unless said)."""
    stamps = [t * unit for t in stamps]
    return TurnRecord(record_key=key, run_point="c4", load_shape="closed", requested_concurrency=4, request_rate=None,
                      question_id=key, category="coding", sub_category="", turn_index=0, num_turns=1, warmup=False,
                      worker=0, prompt_tokens=10, prompt_sha256="", scheduled_ns=0, send_ns=0, end_ns=max(stamps) + 1,
                      started_unix_s=0.0, chunk_ns=list(stamps), chunk_tokens=list(tokens), chunks_are_steps=True,
                      output_tokens=sum(tokens), finish_reason="stop")


ONE_READ = _record([500] * 12, [1] + [4] * 11 + [0] * 0)  # 45 tokens, one stamp: the whole answer at once
HEALTHY = _record([100, 200, 300, 400, 500], [1, 4, 2, 3, 1])
SOME_SHARED = _record([100, 200, 200, 300, 400], [1, 4, 2, 3, 1])  # 1 of 4 chunks after the first shared
HALF_SHARED = _record([100, 200, 200, 300, 300], [1, 4, 2, 3, 1])  # 2 of 4: blurred, not lost
DECODE_IN_ONE_READ = _record([100, 300, 300, 300, 300], [1, 4, 2, 3, 1])  # the first chunk alone, then one read
EMPTY_CHUNK = _record([100, 200, 200, 300], [1, 4, 0, 3])  # a usage-only event sharing a read is no chunk


def test_shared_reads_counted():
    assert shared_read_chunks(ONE_READ.chunk_ns, ONE_READ.chunk_tokens) == 11
    assert shared_read_chunks(HEALTHY.chunk_ns, HEALTHY.chunk_tokens) == 0
    assert shared_read_chunks(SOME_SHARED.chunk_ns, SOME_SHARED.chunk_tokens) == 1
    assert shared_read_chunks(EMPTY_CHUNK.chunk_ns, EMPTY_CHUNK.chunk_tokens) == 0


def test_lagged_records():
    assert client_lagged(ONE_READ) and client_lagged(DECODE_IN_ONE_READ)
    assert not client_lagged(HEALTHY) and not client_lagged(SOME_SHARED) and not client_lagged(EMPTY_CHUNK)
    assert not client_lagged(HALF_SHARED)
    assert not client_lagged(_record([100], [7]))  # one chunk: no timing to lose
    assert not client_lagged(_record([100, 200], [1, 4]))  # two reads: its one gap is measured
    assert client_lagged(_record([200, 200], [1, 4]))


def test_a_burst_faster_than_any_engine_is_lagged():
    """The real vLLM n-gram record of a loaded run (rounded): 5 chunks read at once, then the other 39
    in one read 0.867 ms later. Between its first and last chunk 46 tokens in 0.867 ms: 53,000 tokens/s,
    over the 20,000 no engine reaches, so its decode timing is the delivery's."""
    burst = _record([0] * 5 + [867] * 39, [1, 1, 2, 1, 1] + [1] * 18 + [4] + [1] * 20, unit=1000)
    assert client_lagged(burst)
    # by hand at the bound: 4 + 4 tokens between the first and last chunk in 0.4 ms = 20,000 tokens/s: kept
    assert not client_lagged(_record([0, 200, 400, 400], [1, 4, 4, 3], unit=1000))
    assert client_lagged(_record([0, 199, 399, 399], [1, 4, 4, 3], unit=1000))  # 8 in 0.399 ms: over


def test_point_figures():
    records = [ONE_READ, HEALTHY, SOME_SHARED, HALF_SHARED, DECODE_IN_ONE_READ]
    health = client_timing(records)
    assert (health.num_records, health.num_client_lagged, health.num_records_in_one_read) == (5, 2, 1)
    assert health.num_chunks == 12 + 5 + 5 + 5 + 5 and health.num_chunks_sharing_a_read == 11 + 0 + 1 + 2 + 3
    assert health.client_lagged_share == 2 / 5
    kept, lagged = timed_records(records)
    assert kept == [HEALTHY, SOME_SHARED, HALF_SHARED] and lagged == [ONE_READ, DECODE_IN_ONE_READ]


def test_results_leave_lagged_records_out_of_latency_and_report_them():
    """Two healthy records with 10 ms step gaps and one read at once: step latency and per-user
    speed come from the healthy two (gaps of 10 ms, by hand), the tokens from all three."""
    from speedbench.analysis.run_results import analyse_point

    a = _record([10, 20, 30, 40, 50], [1, 4, 2, 3, 1], "c4/a/0")
    b = _record([10, 20, 30, 40, 50], [1, 4, 2, 3, 1], "c4/b/0")
    lagged = _record([50] * 5, [1, 4, 2, 3, 1], "c4/c/0")
    # its first chunk read alone, the other four in one read 5 ms later: 10 tokens in 5 ms if it counted
    late_decode = _record([45] + [50] * 4, [1, 4, 2, 3, 1], "c4/d/0")
    point = analyse_point("c4", [a, b, lagged, late_decode], "vllm", None, 0.02, 0, draft_length=3)
    assert point.client_timing["num_client_lagged"] == 2 and point.client_timing["client_lagged_share"] == 2 / 4
    latency = point.latency
    assert latency["num_client_lagged"] == 2 and latency["total_output_tokens"] == 4 * 11
    assert latency["step_latency"]["max"] == pytest.approx(0.010) == latency["step_latency"]["min"]
    # per-user speed of the healthy two only: 10 tokens after the first in 40 ms = 250 tokens/s
    assert latency["user_tps"]["count"] == 2
    assert latency["user_tps"]["max"] == pytest.approx(250.0) == latency["user_tps"]["min"]
    assert latency["tpot_request_mean"]["max"] == pytest.approx(0.004)
    assert any(flag.startswith("client_lag: 2 of 4 request(s)") for flag in point.flags)
    assert not point.consistency  # the lagged record is not an impossible engine


def test_loop_lag_spread_per_point():
    """Nearest-rank p50 / p99 / max of the records' loop lags, by hand: 1, 2, 3, 40 ms -> 2, 40, 40."""
    records = []
    for i, lag_ms in enumerate([3, 1, 40, 2]):
        r = _record([100, 200], [1, 4], f"c4/q{i}/0")
        r.client_loop_lag_ns = lag_ms * MS
        records.append(r)
    records.append(_record([100, 200], [1, 4], "c4/old/0"))  # a record written before the field: not counted
    assert client_timing(records).loop_lag_ms == {"requests": 4, "p50": 2.0, "p99": 40.0, "max": 40.0}
    assert client_timing(records[-1:]).loop_lag_ms is None
