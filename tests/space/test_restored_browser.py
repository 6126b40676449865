"""A Space restored from its Hub dataset, in a real browser (issue 32): the entry whose verification
re-checked on its stored runs shows as verified; the one whose document merely says verified
shows as self-reported; the About tab states the head deadline and the connection cap. Against
the local Hub stand-in; headless Chromium."""
from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from playwright import sync_api as playwright_api

from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore, entry_id_for
from speedbench.leaderboard.sync import MirrorSync
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import parse_bundle, submit_bundle
from speedbench.leaderboard.verify import verify_entry

web = runpy.run_path(str(Path(__file__).with_name("gradio_http.py")))
hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
REPO = "speedbench/board"
DEADLINE_S = 120
META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
        "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}
ENGINE = SimulatedEngine(rates=(0.75, 0.6, 0.5))


def _mirror(url: str) -> HubMirror:
    return HubMirror(REPO, api=HfApi(endpoint=url, token="hf_test"))


@pytest.fixture
def restored_space(monkeypatch, tmp_path, make_entry_runs, known_builds, valid_bundle):
    """(url, the verified entry's id, the forged one's id) of a fresh Space restored from the Hub."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub_faults.FaultyHub() as hub:
        sd, base = make_entry_runs(ENGINE, seed=921)
        fresh_sd, fresh_base = make_entry_runs(ENGINE, seed=922, started_unix_s=time.time() + 1)
        old = LeaderboardStore(tmp_path / "old.sqlite3")
        entry = submit_bundle(pack_bundle(sd, META, base), old, known_builds, submitted_at="2026-11-02T00:00:00Z")
        assert verify_entry(old, entry, known_builds, fresh_sd, fresh_base, verifier="maintainer A")[0]
        pusher = MirrorSync(old, _mirror(hub.url), lambda *a: None)
        pusher.mirror.ensure_repo()
        assert pusher.push_due() == 1
        forged = entry_id_for(parse_bundle(valid_bundle, known_builds).measurement_sha256)
        hub.put(REPO, {f"bundles/{forged}.tar.gz": valid_bundle, f"entries/{forged}.json": json.dumps(
            {"id": forged, "submitted_at": "2026-11-03T00:00:00Z", "trust": "verified",
             "verification": {"verifier": "anyone", "verified_at": "2026-11-04T00:00:00Z", "checks": []}}).encode()})

        app = web["app_module"]("speedbench_space_app_restored")
        from sbspace.envs import Settings

        port = web["free_port"]()
        settings = Settings(db_path=tmp_path / "fresh.sqlite3", host="127.0.0.1", port=port)
        demo = app.build_app(settings, known_builds=known_builds, mirror=_mirror(hub.url))
        assert demo.sync.restored_once.wait(DEADLINE_S)
        app.serve(demo, settings, quiet=True)
        try:
            yield f"http://127.0.0.1:{port}/", entry.id, forged
        finally:
            demo.sync.close()
            demo.close()
            demo.store.close()
            old.close()


@pytest.mark.browser
def test_only_the_re_checked_verification_shows_as_verified(restored_space, artifacts_dir):
    url, verified, forged = restored_space
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(url)
        expect = playwright_api.expect
        for entry_id, trust in ((verified, "verified"), (forged, "self-reported")):
            row = page.locator("#board [role=row]", has_text=entry_id)
            expect(row).to_have_count(1, timeout=DEADLINE_S * 1000)
            cells = [c.strip() for c in row.locator("[role=gridcell], [role=cell], td").all_inner_texts()]
            assert trust in cells, (entry_id, cells)
        page.screenshot(path=str(artifacts_dir / "restored-board.png"), full_page=True)
        page.get_by_role("tab", name="About").click()
        expect(page.locator("#promises")).to_contain_text("request head within 20 s")
        expect(page.locator("#promises")).to_contain_text("pass every check of a verification again")
        chromium.close()
