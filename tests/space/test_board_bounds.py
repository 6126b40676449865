"""Search, filters and page rendering are bounded (issue 32): a 4 MiB search is cut before it is
matched, a real search still filters, and the board's rows are read from the store only when it
changed (a page load parsed every stored entry)."""
from __future__ import annotations

import sys
from pathlib import Path

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"
if str(SPACE_DIR) not in sys.path:
    sys.path.insert(0, str(SPACE_DIR))


def test_a_4_mib_search_is_cut_to_the_bound():
    from sbspace import populate

    flood = "a" * (4 * 2**20)
    assert populate.bounded_search(flood) == "a" * populate.MAX_SEARCH_CHARS
    many = " ".join(f"w{i}" for i in range(100))
    assert populate.bounded_search(many).split() == [f"w{i}" for i in range(populate.MAX_SEARCH_WORDS)]
    assert populate.bounded_search(None) == "" and populate.bounded_search(["x"]) == ""


def test_a_real_search_still_filters_and_a_flood_matches_nothing(seeded_store):
    from sbspace import populate
    from speedbench.leaderboard import board

    rows = populate.all_rows(seeded_store)
    word = rows[0]["model"].split("/")[-1].lower()  # one word of one model's name
    expected = sorted(r["id"] for r in rows if word in " ".join(str(r.get(k) or "") for k in board.IDENTITY_KEYS).lower())
    frame, _, _ = populate.board_frame(rows, search=word.upper())
    assert sorted(frame["Entry"]) == expected and 0 < len(expected)
    flood, _, _ = populate.board_frame(rows, search="zz" * (2 * 2**20))
    assert len(flood) == 0


def test_the_rows_are_rebuilt_only_when_the_store_changed(seeded_store, known_builds, valid_bundle):
    from sbspace import populate
    from speedbench.leaderboard.validate import submit_bundle

    cache = populate.BoardCache(seeded_store)
    first = cache.rows()
    assert cache.rows() is first and cache.choices() and cache.entry_labels() and cache.builds == 1
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    assert entry.id in [r["id"] for r in cache.rows()] and cache.builds == 2
    seeded_store.set_trust(entry.id, "verified", {"verifier": "t", "checks": []})  # an update, not an insert
    assert [r.get("trust") for r in cache.rows() if r["id"] == entry.id] == ["verified"] and cache.builds == 3
