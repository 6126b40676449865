"""Records and the append-only file: round trip, torn tail, duplicates."""
from __future__ import annotations

import pytest

from speedbench.client.recording.writer import RecordWriter, load_existing, repair_tail
from speedbench.records import EngineSpecStats, TurnRecord, read_records


def _record(key: str) -> TurnRecord:
    return TurnRecord(record_key=key, run_point="c1", load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id="q", category="qa", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=3, prompt_sha256="abc", scheduled_ns=10,
                      send_ns=11, end_ns=40, started_unix_s=1.5, chunk_ns=[20, 30], chunk_tokens=[1, 3],
                      output_tokens=4, finish_reason="length",
                      engine_stats=EngineSpecStats(source="vllm.metrics", verify_steps=1, accepted_tokens=2,
                                                   acceptance_histogram=[0, 0, 1]))


def test_round_trip_and_derived_times(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        writer.write(_record("a"))
        writer.write(_record("b"))
    records = list(read_records(path))
    assert records == [_record("a"), _record("b")]
    assert records[0].ttft_s == pytest.approx(10e-9) and records[0].e2e_s == pytest.approx(30e-9)


def test_torn_tail_is_cut_and_duplicates_are_refused(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        writer.write(_record("a"))
    good = path.read_bytes()
    path.write_bytes(good + b'{"record_key": "b", "run_po')
    assert repair_tail(path) == len(b'{"record_key": "b", "run_po')
    assert path.read_bytes() == good
    assert list(load_existing(path)) == ["a"]
    path.write_bytes(good + good)
    with pytest.raises(ValueError, match="appears twice"):
        load_existing(path)
