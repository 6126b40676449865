"""A busy client is not an impossible engine: a bundle whose records reached the client in one read
is accepted while their share stays at or below MAX_CLIENT_LAGGED_SHARE (they leave the latency
figures, and the entry shows their share), refused by rule client.lag above it."""
from __future__ import annotations

from speedbench.leaderboard import board
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.validate import submit_bundle
from speedbench.metrics.client_timing import MAX_CLIENT_LAGGED_SHARE


def _read_at_once(row: dict) -> dict:
    """The record as a descheduled client sees it: every chunk stamped when the one read returned."""
    last = row["chunk_ns"][-1]
    return {**row, "chunk_ns": [last] * len(row["chunk_ns"])}


def _lag(bundles, bundle: bytes, count: int, run: str = "qual") -> tuple[bytes, int]:
    files = bundles.unpack(bundle)
    rows = bundles.records(files, run)
    measured = [i for i, r in enumerate(rows) if not r["warmup"] and r["error"] is None and len(r["chunk_ns"]) > 2]
    point = rows[measured[0]]["run_point"]
    mine = [i for i in measured if rows[i]["run_point"] == point]
    for i in mine[:count]:
        rows[i] = _read_at_once(rows[i])
    return bundles.repack(bundles.with_records(files, run, rows)), sum(
        1 for r in rows if not r["warmup"] and r["error"] is None and r["run_point"] == point)


def test_one_lagged_request_is_accepted_and_its_share_shown(seeded_store, known_builds, valid_bundle, bundles):
    data, total = _lag(bundles, valid_bundle, 1)
    entry = submit_bundle(data, seeded_store, known_builds)
    shares = [p["client_lagged_share"] for p in entry.metrics["points"] if p["run"].endswith("qual")]
    assert max(shares) == 1 / total  # shown on the entry; before, rule bounds.user_tps refused the bundle
    # and on the board: the largest share over its points, as a percentage floored to 0.1 (1 of 55: 1.8%)
    assert total == 55 and board.entry_row(entry)["client_lagged"] == 1.8
    other = LeaderboardStore(seeded_store.path.with_name("clean.sqlite3"))
    assert board.entry_row(submit_bundle(valid_bundle, other, known_builds))["client_lagged"] == 0.0
    other.close()


def test_above_the_share_the_bundle_is_refused(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = [r for r in bundles.records(files, "qual") if not r["warmup"] and r["error"] is None]
    point = rows[0]["run_point"]
    total = sum(1 for r in rows if r["run_point"] == point)
    count = int(MAX_CLIENT_LAGGED_SHARE * total) + 1
    data, _ = _lag(bundles, valid_bundle, count)
    bundles.assert_rejected(seeded_store, known_builds, data, "client.lag", "chunk_ns", f"{count} of {total} requests")
