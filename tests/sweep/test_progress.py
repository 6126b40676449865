"""The sweep's bar follows the records the client appends: point now running, points done."""
from __future__ import annotations

import io

from speedbench.sweep.progress import SweepProgress


def test_points_advance_as_the_client_moves_on(tmp_path):
    records = tmp_path / "records.jsonl"
    records.write_bytes(b'{"run_point":"c1","warmup":false}\n')  # from an earlier invocation
    progress = SweepProgress(total_points=6, done_points=1, file=io.StringIO())
    progress.watch("v · w · r1", records, ["c1", "c2", "c4"], set())
    progress.unit_finished(0)  # stop the watcher thread; consume() is driven by hand below
    with open(records, "ab") as handle:
        handle.write(b'{"run_point":"c1","warmup":true}\n{"run_point":"c1","warmup":false}\n{"run_point":"c2"')
    progress.consume()
    assert progress.counted() == 1 and progress.bar.desc == "v · w · r1 · c1 (2 req)"
    with open(records, "ab") as handle:  # the torn line completes; the client is on c2 now
        handle.write(b',"warmup":false}\n{"run_point":"c4","warmup":false}\n')
    progress.consume()
    assert progress.counted() == 1 + 2 and progress.bar.desc == "v · w · r1 · c4 (1 req)"  # c1 and c2 done
    progress.unit_finished(1)  # the run returned: c4 counted
    assert progress.counted() == 4
    progress.close()
