"""The Space in headless Chromium against a hostile store and hostile uploads (issue 11).

The store holds a row no validator would write (a lone surrogate in the model name): the app
quarantines it at start-up and still serves its page. An entry with the nastiest text the
validator accepts (Markdown, links, RTL script, emoji, quotes, backslashes) renders as plain
text: no link, image or emphasis element, no request to the linked address. An upload leaves
nothing behind in Gradio's upload cache.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import sqlite3
import sys
from pathlib import Path

import pytest
from playwright import sync_api as playwright_api

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
TRAP = "http://127.0.0.1:9/t.png"
NASTY_MODEL = f"Ünïcödé/模型🚀 'q' \"dq\" *b* _i_ ![i]({TRAP}) #h |p| \\b $x$ %s {{0}} نموذج"
NASTY_DRAFTER = f"**bold** ~~strike~~ [l]({TRAP}) \\*esc\\* 1. list"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _app_module():
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    spec = importlib.util.spec_from_file_location("speedbench_space_app_hostile", SPACE_DIR / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _insert_surrogate_row(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        cols = [d[1] for d in conn.execute("PRAGMA table_info(submissions)")]
        row = dict(zip(cols, conn.execute("SELECT * FROM submissions LIMIT 1").fetchone()))
        row.update(id="sb-surrogate0001", bundle_sha256="s", measurement_sha256="s",
                   metadata_json=json.dumps({**json.loads(row["metadata_json"]), "model": "\ud800"}))
        assert "\\ud800" in row["metadata_json"]
        conn.execute(f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     list(row.values()))


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory, seeded_db_template, known_builds_dir, known_builds, make_entry_runs):
    import shutil

    cache = tmp_path_factory.mktemp("gradio-cache")
    old_cache = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(cache)
    db = tmp_path_factory.mktemp("hostile") / "board.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    store = LeaderboardStore(db)
    sd, _ = make_entry_runs(SimulatedEngine(rates=(0.6, 0.5, 0.4)), seed=951, throughput=False)
    nasty = submit_bundle(pack_bundle(sd, {"model": NASTY_MODEL, "drafter": NASTY_DRAFTER, "sd_method": "eagle3",
                                           "engine": "vllm", "engine_version": "0.11.0", "gpu": "B200",
                                           "draft_length": 3, "temperature": 0}), store, known_builds)
    store.close()
    _insert_surrogate_row(db)

    app = _app_module()
    from sbspace.envs import Settings

    port = _free_port()
    settings = Settings(db_path=db, port=port, known_builds=[str(known_builds_dir)])
    demo = app.build_app(settings)  # quarantines the unreadable row instead of exiting
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        max_file_size=settings.limits.max_archive_bytes)
    yield f"http://127.0.0.1:{port}/", demo.store, nasty, cache
    demo.close()
    demo.store.close()
    if old_cache is None:
        os.environ.pop("GRADIO_TEMP_DIR", None)
    else:
        os.environ["GRADIO_TEMP_DIR"] = old_cache


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, hostile_server):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(hostile_server[0])
    page.locator("#board div[role=row]").first.wait_for()
    playwright_api.expect(page.locator("#board [data-testid=status-tracker]").first).to_have_class(
        re.compile(r"\bhide\b"))
    yield page
    page.close()
    assert not errors, errors
    assert not [u for u in requests if u.startswith("http://127.0.0.1:9/")], "a submitter's link was fetched"


def test_surrogate_row_is_quarantined_and_the_page_is_served(page, hostile_server):
    _, store, nasty, _ = hostile_server
    expect = playwright_api.expect
    expect(page.locator("#board div[role=row]")).to_have_count(4)  # 3 seeded + the nasty entry; not the bad row
    assert store.get("sb-surrogate0001") is None and store.entries_and_problems()[1] == []
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT id FROM quarantine").fetchall() == [("sb-surrogate0001",)]


def test_the_nastiest_accepted_text_renders_as_plain_text(page, hostile_server, artifacts_dir):
    board = page.locator("#board")
    text = board.inner_text()
    assert NASTY_MODEL in text and NASTY_DRAFTER in text
    # nothing was turned into markup: no link, image, emphasis or code element in the table
    assert board.locator("a, img, em, strong, del, code, ol, li, h1").count() == 0
    page.screenshot(path=str(artifacts_dir / "hostile-01-plain-text.png"), full_page=True)


def test_an_upload_leaves_nothing_in_the_upload_cache(page, hostile_server, tmp_path, valid_bundle):
    _, store, _, cache = hostile_server
    probe = tmp_path / "cache-probe.tar.gz"
    probe.write_bytes(valid_bundle[:-10])  # a truncated archive: rejected
    page.get_by_role("tab", name="Submit").click()
    page.set_input_files("#bundle-upload input[type=file]", str(probe))
    playwright_api.expect(page.locator(f"#bundle-upload a[href$='/{probe.name}']")).to_have_count(1)
    before = store.snapshot()
    page.click("#submit-button")
    status = page.locator("#submit-status textarea")
    playwright_api.expect(status).to_have_value(re.compile(r"rule archive\.truncated"), timeout=30_000)
    assert store.snapshot() == before
    left = [p for p in Path(cache).rglob("*") if p.is_file() and p.name == probe.name]
    assert left == [], left
