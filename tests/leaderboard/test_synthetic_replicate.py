"""replicate_run: the benches' largest bundles repeat one run's c1 records at every load point."""
from __future__ import annotations

import json

from speedbench.leaderboard.synthetic import SimulatedEngine, make_run, replicate_run

MOVED = ("end_ns", "run_point", "requested_concurrency", "record_key")


def _unmoved(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in MOVED}


def test_replicate_run_repeats_the_records_at_each_point_with_distinct_ends(tmp_path, dataset_dir):
    base = make_run(tmp_path / "base", dataset_dir, "qualitative", SimulatedEngine(), output_tokens=8, limit=3)
    out = replicate_run(base, tmp_path / "copy", points=2, salt=4)
    before = [json.loads(line) for line in (base / "records.jsonl").read_text().splitlines()]
    after = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(before) == 3 and len(after) == 6
    for c, records in ((1, after[:3]), (2, after[3:])):
        for old, new in zip(before, records):
            assert new["end_ns"] == old["end_ns"] + 400 + c
            assert (new["run_point"], new["requested_concurrency"]) == (f"c{c}", c)
            assert new["record_key"] == f"c{c}/{old['question_id']}/0"
            assert _unmoved(new) == _unmoved(old)
    for name in ("manifest.json", "results.json"):
        assert (out / name).read_bytes() == (base / name).read_bytes()
