"""The report's points table shows each point's client timing health (issue 20): client-lagged share,
chunks sharing a read, the client's event-loop lag, from records whose figures are set by hand."""
from __future__ import annotations

import json

import pytest

from speedbench.report import build_report


def test_points_show_client_timing(tmp_path, run_writer, records_maker):
    records = records_maker(speculative=True, draft_length=4, concurrency=1, per_category=2, max_tokens=24,
                            ttft_s=0.05, step_s=0.02, seed=0)  # 6 requests, one chunk per read
    lagged = records[0]
    lagged.chunk_ns = [lagged.chunk_ns[0]] + [lagged.chunk_ns[-1]] * (len(lagged.chunk_ns) - 1)  # decode in one read
    for record, lag_ms in zip(records, [40, 1, 2, 3, 4, 5]):
        record.client_loop_lag_ns = lag_ms * 1_000_000
    run = run_writer(tmp_path / "run", speculative=True, concurrencies=(), extra_records=records)
    files = build_report([run], tmp_path / "out")
    row = json.loads(files.json.read_text())["points"][0]
    # by hand: 1 of 6 lagged; its chunks after the second share the read before them
    shared = len(lagged.chunk_ns) - 2
    assert row["client_lagged_share"] == pytest.approx(1 / 6)
    assert row["chunks_sharing_a_read_share"] == pytest.approx(shared / sum(len(r.chunk_ns) for r in records))
    # nearest rank over 1, 2, 3, 4, 5, 40 ms: p50 = 3 ms, p99 = max = 40 ms
    assert (row["loop_lag_p50_s"], row["loop_lag_p99_s"], row["loop_lag_max_s"]) == (0.003, 0.04, 0.04)
    markdown = files.markdown.read_text()
    assert "client-lagged" in markdown and "16.7%" in markdown and "40.00" in markdown
    assert "client loop lag p99 (ms)" in files.html.read_text()
