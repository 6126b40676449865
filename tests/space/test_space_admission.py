"""The Space's uploads and comparisons under load (issue 24), through its own API and UI events:
one limit shared by the Submit tab and the API, identical uploads at once each answered, Compare
seeing entries added after start and paying for each pair once."""
from __future__ import annotations

import runpy
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from speedbench.leaderboard import board, validate
from speedbench.leaderboard.admission import Budget
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.synthetic import SimulatedEngine

web = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))
DEADLINE_S = 600  # only how long a broken test may take to fail (the machine may be busy)
META = {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm", "engine_version": "1", "gpu": "g",
        "draft_length": 3, "temperature": 0.0}


@pytest.fixture
def space(tmp_path, seeded_db_template, known_builds_dir):
    app = web["app_module"]()
    from sbspace.envs import Settings

    db = tmp_path / "board.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    port = web["free_port"]()
    demo = app.build_app(Settings(db_path=db, port=port, known_builds=[str(known_builds_dir)],
                                  budget=Budget(max_concurrent=2)))
    url = web["launch"](demo, port)
    yield url, demo
    demo.close()
    demo.store.close()


@pytest.fixture(scope="module")
def eight_bundles(make_entry_runs) -> list[bytes]:
    return [pack_bundle(make_entry_runs(SimulatedEngine(rates=(0.7, 0.6, 0.5)), seed=2400 + i, throughput=False)[0],
                        META) for i in range(8)]


def test_api_and_ui_uploads_share_one_limit(space, eight_bundles, monkeypatch):
    url, demo = space
    gate = threading.Event()
    real_parse = validate.parse_bundle

    def parse_after_gate(*args, **kwargs):
        gate.wait(DEADLINE_S)
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(validate, "parse_bundle", parse_after_gate)
    ui = web["fn_index"](demo, "on_submit")
    controls = ["", [], [], [], "any", "Mean AL", True, False]

    def via_api(data: bytes) -> str:
        path = web["upload"](url, data)
        from gradio_client import handle_file

        return web["client"](url).predict(handle_file(path), api_name="/submit_bundle")["status"]

    def via_ui(data: bytes) -> str:
        path = web["upload"](url, data)
        return web["ui_call"](url, ui, [web["file_data"](path), *controls])[1]["status"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(via_api if i % 2 else via_ui, data) for i, data in enumerate(eight_bundles)]
        assert demo.admission.wait_for(lambda a: a.running == 2 and a.waiting == 6, DEADLINE_S), \
            (demo.admission.running, demo.admission.waiting)
        gate.set()
        answers = [f.result(DEADLINE_S) for f in futures]
    assert answers == ["accepted"] * 8
    assert demo.admission.peak_running == 2


def test_identical_uploads_at_once_each_get_their_own_answer(space, valid_bundle):
    url, demo = space
    paths = [web["upload"](url, valid_bundle) for _ in range(9)]
    assert len(set(paths)) == 1  # Gradio keeps identical bytes in one content-hash folder
    api = web["fn_index"](demo, "submit_bundle")

    def send(path):  # as a client that uploaded first, then calls (more calls than Gradio runs at once)
        return web["ui_call"](url, api, [web["file_data"](path)])[0]

    with ThreadPoolExecutor(max_workers=9) as pool:
        answers = list(pool.map(send, paths))
    accepted = [a for a in answers if a["status"] == "accepted"]
    assert len(accepted) == 1, answers
    assert all("duplicate" in a["message"] and accepted[0]["entry_id"] in a["message"]
               for a in answers if a is not accepted[0]), answers
    assert not Path(paths[0]).exists()  # removed once the last request was done


def test_compare_sees_entries_added_after_start_and_pays_for_each_pair_once(space, valid_bundle, monkeypatch):
    url, demo = space
    from gradio_client import handle_file

    api = web["client"](url)
    added = api.predict(handle_file(web["upload"](url, valid_bundle)), api_name="/submit_bundle")
    assert added["status"] == "accepted"
    old = demo.store.entries()[0].id
    pairs = []
    real = board.compare_runs
    monkeypatch.setattr(board, "compare_runs", lambda *a: pairs.append(1) or real(*a))
    side, diffs, _, note = api.predict([added["entry_id"], *[old] * 10], "any", api_name="/compare")
    assert added["entry_id"] in [h for h in side["headers"]] and old in side["headers"]
    assert len(pairs) == 1 and {row[1] for row in diffs["data"]} == {old}


def test_the_about_tab_states_the_bounds_this_space_runs_under():
    import sys

    from speedbench.leaderboard.archive import ArchiveLimits

    web["app_module"]()  # puts space/ on sys.path
    about = sys.modules["sbspace.about"]
    text = about.promises(ArchiveLimits(max_archive_bytes=32 * 2**20), Budget(max_concurrent=3, cpu_seconds=90), 6)
    assert "**self-reported**" in text and "**verified**" in text and "**Durability**" in text
    assert "at most 32 MiB" in text and "3 validation(s)" in text and "90 CPU seconds" in text


def _live_records() -> int:
    import gc

    from speedbench.records import TurnRecord

    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is TurnRecord)


def test_compare_waits_for_the_shared_limit_and_keeps_no_records(space):
    """Compare reads two entries' whole bundles (up to the unpacked cap each): it takes a slot of
    the one admission control like an upload, and keeps only the pair's small result, not the
    entries' records (a cache of them held the app above its memory bound)."""
    url, demo = space
    ids = [e.id for e in demo.store.entries()[:2]]
    before = _live_records()
    taken, release = [threading.Event(), threading.Event()], threading.Event()

    def upload_in_progress(i: int) -> None:
        with demo.admission.slot(0):
            taken[i].set()
            release.wait(DEADLINE_S)

    holders = [threading.Thread(target=upload_in_progress, args=(i,), daemon=True) for i in range(2)]
    for holder in holders:
        holder.start()
    assert all(t.wait(DEADLINE_S) for t in taken)  # both slots (max_concurrent=2) are busy
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(lambda: web["client"](url).predict(ids, "any", api_name="/compare"))
        assert demo.admission.wait_for(lambda a: a.waiting == 1, DEADLINE_S)
        assert not answer.done()
        release.set()
        side, diffs, _, note = answer.result(DEADLINE_S)
    assert {row[1] for row in diffs["data"]} == {ids[1]} and "Differences are" in note
    assert demo.admission.peak_running == 2
    assert _live_records() == before


def test_an_upload_never_submitted_is_swept_from_the_disk(space):
    """Anyone can POST files to /gradio_api/upload without submitting them; Gradio keeps them until
    the app stops unless its cache sweep is on (an attacker could fill the Space's disk)."""
    from gradio.route_utils import delete_files_created_by_app

    url, demo = space
    path = Path(web["upload"](url, b"never submitted"))
    assert path.exists() and demo.delete_cache == (1800, 7200)
    delete_files_created_by_app(demo, age=0)  # what the sweep does to a file past its age
    assert not path.exists()


def test_compare_over_the_api_takes_an_isl_first_seen_after_start(tmp_path, known_builds_dir, valid_bundle):
    """The Pareto ISL's choices were those of the board at start: an API call naming an ISL that only
    entries added later have was refused ('Value: 1k is not in the list of choices: ['any']')."""
    app = web["app_module"]()
    from gradio_client import handle_file
    from sbspace.envs import Settings

    port = web["free_port"]()
    demo = app.build_app(Settings(db_path=tmp_path / "empty.sqlite3", port=port,
                                  known_builds=[str(known_builds_dir)]))
    url = web["launch"](demo, port)
    try:
        api = web["client"](url)
        added = api.predict(handle_file(web["upload"](url, valid_bundle)), api_name="/submit_bundle")
        assert added["status"] == "accepted"
        side, _, _, note = api.predict([added["entry_id"]], "1k", api_name="/compare")
        assert note == "Pick two or more entries."
    finally:
        demo.close()
        demo.store.close()
