"""The Space with a Hub dataset as its store of record (issue 24), against a Hub that refuses
connections or never answers: the app starts, serves its board, says the copy is behind and takes
uploads; a fresh Space restores the board in the background with the entries' own dates."""
from __future__ import annotations

import runpy
import shutil
import sys
import threading
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi

from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.sync import MirrorSync

web = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))
hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
REPO = "speedbench/board"
DEADLINE_S = 120  # how long a broken start may block before the test fails; never a measured figure


@pytest.fixture
def online(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def _mirror(url: str) -> HubMirror:
    return HubMirror(REPO, api=HfApi(endpoint=url, token="hf_test"))


def _build(tmp_path, known_builds, mirror, db_template=None):
    """build_app in a thread: returns (demo or None if still blocked after the deadline, the thread)."""
    app = web["app_module"]("speedbench_space_app_durable")
    from sbspace.envs import Settings

    db = tmp_path / "board.sqlite3"
    if db_template is not None:
        shutil.copyfile(db_template, db)
    built: dict = {}
    thread = threading.Thread(target=lambda: built.update(demo=app.build_app(
        Settings(db_path=db, port=0), known_builds=known_builds, mirror=mirror)), daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    return built.get("demo"), thread


def _upload(demo, tmp_path, data: bytes, known_builds):
    from sbspace import submission
    from speedbench.leaderboard.archive import ArchiveLimits

    path = tmp_path / "upload.tar.gz"
    path.write_bytes(data)
    return submission.handle_upload(str(path), demo.store, known_builds, ArchiveLimits(), demo.admission, demo.sync)


def test_a_refusing_hub_does_not_stop_the_space(online, tmp_path, known_builds, valid_bundle):
    demo, thread = _build(tmp_path, known_builds, _mirror(hub_faults.refused_url()))
    assert demo is not None and not thread.is_alive()
    assert demo.sync.attempted.wait(DEADLINE_S)
    status = demo.sync.status()
    assert status.phase == "unreachable" and "cannot be reached" in status.text()
    port = web["free_port"]()
    url = web["launch"](demo, port)
    assert httpx.get(url, timeout=60).status_code == 200
    result = _upload(demo, tmp_path, valid_bundle, known_builds)
    assert result.accepted and [e for e, *_ in demo.store.outbox()] == [result.entry_id]
    demo.sync.close()
    demo.close()
    demo.store.close()


def test_a_hanging_hub_blocks_neither_the_start_nor_an_upload(online, tmp_path, known_builds, valid_bundle):
    with hub_faults.HangingHub() as hanging:
        demo, thread = _build(tmp_path, known_builds, _mirror(hanging.url))
        assert demo is not None and not thread.is_alive()
        assert hanging.accepted.wait(DEADLINE_S)  # the sync is talking to the Hub, which holds it
        result = _upload(demo, tmp_path, valid_bundle, known_builds)
        assert result.accepted and hanging.held  # answered while the Hub still holds its request
        assert demo.store.get(result.entry_id) is not None
        demo.sync.close()
    demo.store.close()


def test_a_fresh_space_restores_its_board_in_the_background(online, tmp_path, seeded_store, known_builds):
    with hub_faults.FaultyHub() as hub:
        verified = seeded_store.entries()[1]
        seeded_store.set_trust(verified.id, "verified", {"verifier": "maintainer", "checks": []})
        pusher = MirrorSync(seeded_store, _mirror(hub.url), lambda *a: None)
        pusher.mirror.ensure_repo()
        assert pusher.push_due() == 3
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        demo, _ = _build(fresh, known_builds, _mirror(hub.url))
        assert demo.sync.restored_once.wait(DEADLINE_S)
        # trust never comes from the Hub's document (issue 32): the verified one is self-reported, noted
        assert [(e.id, e.submitted_at, e.trust) for e in demo.store.entries()] == \
            [(e.id, e.submitted_at, "self-reported") for e in seeded_store.entries()]
        assert "restored.verification_unchecked" in [w["code"] for w in demo.store.get(verified.id).warnings]
        demo.sync.close()
        demo.store.close()
