"""The Space in a real browser (headless Chromium via playwright) and `speedbench submit` against it.

The app is launched in-process on a free 127.0.0.1 port over a copy of the seeded store; a
second test starts ``python space/app.py`` as a subprocess to check its environment variables.
Screenshots go to ``test-artifacts/space/``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from playwright import sync_api as playwright_api

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"

# Without Chromium these tests fail and name the install command (tests/conftest.py), never skip.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_app_module():
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    spec = importlib.util.spec_from_file_location("speedbench_space_app", SPACE_DIR / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server(tmp_path_factory, seeded_db_template, known_builds_dir):
    import shutil

    app = load_app_module()
    from sbspace.envs import Settings

    db = tmp_path_factory.mktemp("browser") / "board.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    port = free_port()
    settings = Settings(db_path=db, port=port, known_builds=[str(known_builds_dir)])
    demo = app.build_app(settings)
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        max_file_size=settings.limits.max_archive_bytes)
    yield f"http://127.0.0.1:{port}/", demo.store
    demo.close()
    demo.store.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server[0])
    page.locator("#board div[role=row]").first.wait_for()
    wait_idle(page, "board")  # the page's load event refreshes the table once
    yield page
    page.close()
    assert not errors, errors  # no script error, and nothing a submitter wrote ran as script


def wait_idle(page, elem_id: str):
    """Until the component's Gradio status tracker is hidden again (its event has finished)."""
    playwright_api.expect(page.locator(f"#{elem_id} [data-testid=status-tracker]").first).to_have_class(
        re.compile(r"\bhide\b"))


def board_rows(page):
    return page.locator("#board div[role=row]")


def pick(page, dropdown_id: str, option: str):
    page.click(f"#{dropdown_id} input")
    page.click(f"#{dropdown_id} [role=option][aria-label='{option}']")
    page.keyboard.press("Escape")


def test_table_shows_the_seeded_entries(page, artifacts_dir):
    expect = playwright_api.expect
    expect(board_rows(page)).to_have_count(3)
    text = page.locator("#board").inner_text()
    for expected in ("EAGLE3-LLaMA3.3-Instruct-70B", "native MTP", "n-gram (prompt lookup)", "Speedup 1k (best)"):
        assert expected in text
    # sorted by mean AL, descending: EAGLE3 (AL ~2.7) before MTP (~2.6) before n-gram (~1.7)
    assert "eagle3" in board_rows(page).nth(0).inner_text()
    assert "ngram" in board_rows(page).nth(2).inner_text()
    page.screenshot(path=str(artifacts_dir / "01-browse.png"), full_page=True)


def test_filters_and_search_narrow_the_table(page, artifacts_dir):
    expect = playwright_api.expect
    pick(page, "f-engine", "sglang")
    expect(board_rows(page)).to_have_count(1)
    expect(board_rows(page).first).to_contain_text("Qwen/Qwen3-Next-80B-A3B")
    wait_idle(page, "board")
    page.screenshot(path=str(artifacts_dir / "02-filter-engine.png"), full_page=True)
    page.reload()
    expect(board_rows(page)).to_have_count(3)
    page.fill("#search textarea, #search input", "n-gram")
    expect(board_rows(page)).to_have_count(1)
    expect(board_rows(page).first).to_contain_text("trtllm")
    page.reload()
    pick(page, "f-isl", "1k")  # the MTP entry has no throughput runs
    expect(board_rows(page)).to_have_count(2)
    # scroll the table to its right end to show the speedup columns
    page.evaluate("""() => { for (const e of document.querySelectorAll('#board *'))
                                 if (e.scrollWidth > e.clientWidth + 10) e.scrollLeft = e.scrollWidth; }""")
    expect(page.locator("#board")).to_contain_text("Speedup 1k (best)")
    wait_idle(page, "board")
    page.screenshot(path=str(artifacts_dir / "02b-filter-isl-speedups.png"), full_page=True)


def upload(page, path: Path):
    page.get_by_role("tab", name="Submit").click()
    page.set_input_files("#bundle-upload input[type=file]", str(path))
    # the upload is done when the component links the stored file
    playwright_api.expect(page.locator(f"#bundle-upload a[href$='/{path.name}']")).to_have_count(1)
    page.click("#submit-button")


def test_valid_bundle_submitted_in_the_ui_appears_in_the_table(page, server, valid_bundle, tmp_path, artifacts_dir):
    expect = playwright_api.expect
    path = tmp_path / "llamacpp-draft-model.tar.gz"
    path.write_bytes(valid_bundle)
    upload(page, path)
    expect(page.locator("#submit-status textarea")).to_have_value(re.compile(re.escape("Accepted")), timeout=30_000)
    page.screenshot(path=str(artifacts_dir / "03-submit-accepted.png"), full_page=True)
    page.get_by_role("tab", name="Browse").click()
    expect(board_rows(page)).to_have_count(4)
    expect(page.locator("#board")).to_contain_text("RTX 4090")
    wait_idle(page, "board")
    page.screenshot(path=str(artifacts_dir / "04-browse-after-submit.png"), full_page=True)
    assert server[1].count() == 4


def test_invalid_bundles_show_their_error_and_change_nothing(page, server, valid_bundle, tmp_path, artifacts_dir):
    import io
    import tarfile

    expect = playwright_api.expect
    store: LeaderboardStore = server[1]
    before = store.snapshot()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(valid_bundle[: len(valid_bundle) // 2])
    upload(page, truncated)
    expect(page.locator("#submit-status textarea")).to_have_value(re.compile(re.escape("truncated or corrupt")), timeout=30_000)

    # a bundle whose model name carries a script: rejected, and the message shows it as text
    with tarfile.open(fileobj=io.BytesIO(valid_bundle), mode="r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}
    doc = json.loads(files["submission.json"])
    doc["metadata"]["model"] = "<script>window.__pwned = 1</script>"
    files["submission.json"] = json.dumps(doc).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    scripted = tmp_path / "scripted.tar.gz"
    scripted.write_bytes(raw.getvalue())
    page.reload()
    upload(page, scripted)
    expect(page.locator("#submit-status textarea")).to_have_value(re.compile(re.escape("metadata.model contains markup")), timeout=30_000)
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(artifacts_dir / "05-submit-rejected.png"), full_page=True)
    assert store.snapshot() == before


def test_compare_two_entries(page, server, artifacts_dir):
    expect = playwright_api.expect
    ids = [e.id for e in server[1].entries()][:3:2]  # EAGLE3 and n-gram: same prompts, both with throughput runs
    page.get_by_role("tab", name="Compare").click()
    for entry_id in ids:
        page.click("#compare-entries input")
        page.locator("#compare-entries [role=option]", has_text=entry_id).click()
    page.keyboard.press("Escape")
    page.click("#compare-button")
    expect(page.locator("#compare-side div[role=row]")).to_have_count(12, timeout=30_000)  # "all" + 11 categories
    expect(page.locator("#compare-diff")).to_contain_text("coding")
    expect(page.locator("#compare-note textarea")).to_have_value(re.compile("paired bootstrap"))
    expect(page.locator("#pareto canvas, #pareto svg").first).to_be_visible()
    wait_idle(page, "pareto")
    page.screenshot(path=str(artifacts_dir / "06-compare.png"), full_page=True)


def test_about_tab(page, artifacts_dir):
    page.get_by_role("tab", name="About").click()
    playwright_api.expect(page.get_by_text("How to reproduce a row")).to_be_visible()
    assert "speedbench2026" in page.locator("#citation textarea").input_value()
    page.screenshot(path=str(artifacts_dir / "07-about.png"), full_page=True)


def _cli(capsys, *args: str) -> subprocess.CompletedProcess:
    """`speedbench submit ARGS` in this process (the console entry point's main)."""
    from speedbench.cli import main

    capsys.readouterr()
    code = main(["submit", *args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["speedbench", "submit", *args], code, out, err)


def test_speedbench_submit_against_python_space_app(tmp_path, seeded_db_template, known_builds_dir,
                                                    make_entry_runs, capsys):
    """`python space/app.py` honours GRADIO_SERVER_PORT and SPEEDBENCH_DB; `speedbench submit` talks to it."""
    import shutil

    from speedbench.leaderboard.synthetic import SimulatedEngine

    db = tmp_path / "cli.sqlite3"
    shutil.copyfile(seeded_db_template, db)
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "SPEEDBENCH_DB": str(db),
           "SPEEDBENCH_KNOWN_BUILDS": str(known_builds_dir), "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, str(SPACE_DIR / "app.py")], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        output = []
        for line in process.stdout:  # blocks until the server says where it listens
            output.append(line)
            if "Running on local URL" in line:
                assert f"http://127.0.0.1:{port}" in line
                break
        else:
            pytest.fail("space/app.py exited before serving:\n" + "".join(output[-30:]))
        url = f"http://127.0.0.1:{port}"
        sd, baselines = make_entry_runs(SimulatedEngine(engine="vllm", rates=(0.75, 0.6, 0.5)), seed=500)
        args = [str(d) for d in sd] + ["--baseline", str(baselines[0]), "--space", url, "--drafter", "EAGLE3-test",
                                       "--method", "eagle3", "--gpu", "H200", "--draft-length", "3",
                                       "--temperature", "0"]
        accepted = _cli(capsys, *args)
        assert accepted.returncode == 0, accepted.stderr
        entry_id = accepted.stdout.strip()
        assert entry_id.startswith("sb-")
        duplicate = _cli(capsys, *args)
        assert duplicate.returncode == 1
        assert "rejected: duplicate submission" in duplicate.stderr and entry_id in duplicate.stderr
    finally:
        process.terminate()
        process.wait(timeout=30)
    store = LeaderboardStore(db)
    assert store.get(entry_id).metadata["gpu"] == "H200"
    assert store.count() == 4
    store.close()


def test_speedbench_submit_writes_a_bundle_and_dry_runs(tmp_path, make_entry_runs, known_builds_dir, capsys,
                                                        monkeypatch):
    from speedbench.leaderboard.archive import read_archive
    from speedbench.leaderboard.synthetic import SimulatedEngine

    # The dry run checks the dataset build as the Space does: the test datasets' descriptors.
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))

    sd, _ = make_entry_runs(SimulatedEngine(engine="sglang", engine_version="0.5.4"), seed=700, throughput=False)
    out = tmp_path / "bundle.tar.gz"
    result = _cli(capsys, str(sd[0]), "--out", str(out), "--dry-run", "--drafter", "d", "--method", "eagle3", "--gpu", "H100")
    assert result.returncode == 0, result.stderr
    assert "mean AL" in result.stdout and "coding" in result.stdout
    files = read_archive(out.read_bytes())
    meta = json.loads(bytes(files["submission.json"]))["metadata"]
    # model, engine, version, draft length and temperature come from the run's manifest when not given
    assert (meta["model"], meta["engine"], meta["engine_version"], meta["draft_length"], meta["temperature"]) == (
        "meta-llama/Llama-3.3-70B-Instruct", "sglang", "0.5.4", 3, 0.0)
    assert out.read_bytes() == pack_bundle(sd, meta)  # deterministic packing
