"""Search, filters and page rendering are bounded (issue 32): a 4 MiB search is cut before it is
matched, a real search still filters, and the board's rows are read from the store only when it
changed (a page load parsed every stored entry)."""
from __future__ import annotations

import sqlite3
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
    assert cache.rows_built == 3 and first == populate.all_rows(seeded_store)
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    assert entry.id in [r["id"] for r in cache.rows()] and cache.builds == 2
    # only the new entry's row was built; the rows are what a full rebuild gives
    assert cache.rows_built == 4 and cache.rows() == populate.all_rows(seeded_store)
    seeded_store.set_trust(entry.id, "verified", {"verifier": "t", "checks": []})  # an update, not an insert
    assert [r.get("trust") for r in cache.rows() if r["id"] == entry.id] == ["verified"] and cache.builds == 3
    assert cache.rows_built == 5 and cache.rows() == populate.all_rows(seeded_store)
    assert cache.choices() == populate.filter_choices(populate.all_rows(seeded_store))
    with sqlite3.connect(seeded_store.path) as other:  # another process's plain UPDATE: the trigger counts it
        other.execute("UPDATE submissions SET trust = 'self-reported', verification_json = NULL WHERE id = ?",
                      (entry.id,))
    assert [r.get("trust") for r in cache.rows() if r["id"] == entry.id] == ["self-reported"]
    assert cache.rows_built == 6 and cache.rows() == populate.all_rows(seeded_store)


def test_searches_have_their_own_two_workers_and_never_take_nor_wait_for_an_upload_slot(
        seeded_db, known_builds, tmp_path):
    """The decision (docs/leaderboard.md, "Searches"): a search is bounded by its own work (the cut
    query over the cached rows) and its own two workers, not by the admission's validation slots:
    in those slots a flood of searches would queue the uploads behind it. Here every slot is held
    by uploads, and a search still answers at once, filtered, without queueing for one."""
    import runpy
    import threading

    from sbspace.envs import Settings
    from speedbench.leaderboard.admission import Budget

    app = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))["app_module"]()
    demo = app.build_app(Settings(db_path=seeded_db, budget=Budget(max_concurrent=2)), known_builds=known_builds)
    try:
        browse = [f for f in demo.fns.values() if f.concurrency_id == "browse"]
        assert len(browse) == 8 and {f.name for f in browse} == {"table"}  # one per control
        assert all(f.concurrency_limit == 2 for f in browse)
        uploads = [f for f in demo.fns.values() if f.name in ("on_submit", "api_submit")]
        assert len(uploads) == 2 and all(f.concurrency_id != "browse" for f in uploads)

        release, holders = threading.Event(), []
        for _ in range(2):  # two uploads validating: every slot taken
            def hold():
                with demo.admission.slot(0):
                    release.wait()
            holders.append(threading.Thread(target=hold, daemon=True))
            holders[-1].start()
        assert demo.admission.wait_for(lambda a: a.running == 2, 120)
        model = demo.store.entries()[0].metadata["model"]
        expected = sorted(e.id for e in demo.store.entries() if e.metadata["model"] == model)
        found = {}
        search = threading.Thread(target=lambda: found.setdefault("frame", browse[0].fn(
            model, [], [], [], "any", "Mean AL", True, False).value), daemon=True)
        search.start()
        search.join(timeout=120)  # a search waiting for a slot would never end while they are held
        assert not search.is_alive() and demo.admission.waiting == 0
        frame = found["frame"]
        column = frame["headers"].index("Entry")
        assert sorted(r[column] for r in frame["data"]) == expected and 0 < len(expected) < len(demo.store.entries())
        release.set()
        for holder in holders:
            holder.join(timeout=120)
    finally:
        demo.close()
        demo.store.close()
