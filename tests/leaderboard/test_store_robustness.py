"""What held must keep holding: 40 concurrent submissions, and kill -9 in the middle of an insert."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

META = {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm", "engine_version": "1", "gpu": "g",
        "draft_length": 3, "temperature": 0.0}


def test_forty_concurrent_submissions(seeded_store, known_builds, make_entry_runs, bundles):
    distinct = [pack_bundle(make_entry_runs(SimulatedEngine(rates=(0.7, 0.6, 0.5)), seed=1000 + i,
                                            throughput=False)[0], META) for i in range(20)]
    # each measurement twice: once as packed, once re-packed as zip (the same measurement)
    uploads = distinct + [bundles.as_zip(bundles.unpack(b)) for b in distinct]
    before = seeded_store.count()

    def submit(data: bytes) -> str:
        try:
            return submit_bundle(data, seeded_store, known_builds).id
        except BundleRejected as exc:
            return f"rejected {exc.rule}"

    with ThreadPoolExecutor(max_workers=40) as pool:
        results = list(pool.map(submit, uploads))
    accepted = [r for r in results if not r.startswith("rejected")]
    assert len(accepted) == len(set(accepted)) == 20
    assert sorted(r for r in results if r.startswith("rejected")) == ["rejected duplicate.measurement"] * 20
    assert seeded_store.count() == before + 20
    with sqlite3.connect(seeded_store.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM bundles").fetchone()[0] == before + 20


KILLED_WRITER = r"""
import sys
from speedbench.leaderboard.store import LeaderboardStore
store = LeaderboardStore(sys.argv[1])
with store._transaction() as conn:
    conn.execute("INSERT INTO submissions (id, bundle_sha256, archive_sha256, submitted_at, schema_version, "
                 "metadata_json, metrics_json, metrics_version, measurement_sha256) "
                 "VALUES ('sb-partial', 'x', 'x', '2026', 1, '{}', '{}', '1', 'x')")
    conn.execute("INSERT INTO bundles VALUES ('sb-partial', ?)", (b"\0" * (32 * 2**20),))
    print("inserted", flush=True)
    sys.stdin.readline()  # killed here, inside the transaction
"""


def test_kill_9_mid_insert_leaves_no_partial_row(seeded_db):
    store = LeaderboardStore(seeded_db)
    before = store.snapshot()
    store.close()
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(seeded_db)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "inserted"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    child.stdin.close()
    child.stdout.close()
    store = LeaderboardStore(seeded_db)
    assert store.snapshot() == before and store.get("sb-partial") is None
    with sqlite3.connect(seeded_db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM bundles WHERE submission_id = 'sb-partial'").fetchone()[0] == 0
    store.close()
