"""The report page in a real browser (headless Chromium): it renders, every image loads, no console errors."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def browser():
    # Without Chromium the test fails (tests/conftest.py), it is never skipped.
    from playwright import sync_api as playwright_api
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def test_report_renders_in_chromium(browser, synthetic_report):
    files, data = synthetic_report
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    console_errors, page_errors, requests = [], [], []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(files.html.as_uri())
    page.wait_for_load_state("load")
    widths = page.evaluate("Array.from(document.images).map(img => img.complete ? img.naturalWidth : 0)")
    assert len(widths) == len(files.figures) >= 5
    assert all(width > 0 for width in widths)
    assert console_errors == [] and page_errors == []
    # Self-contained: the page fetched nothing but itself (images are data: URIs).
    assert [url for url in requests if not url.startswith("data:")] == [files.html.as_uri()]
    assert page.title() == data["title"]
    headings = page.locator("h2").all_inner_texts()
    assert {"Summary", "Acceptance", "Speedup", "Latency", "Flags", "Provenance"} <= set(headings)
    # The acceptance table shows the same rounded AL as the JSON.
    al = next(r for r in data["acceptance"] if r["run"] == "sd" and r["point"] == "c1" and r["category"] == "all")
    assert f"{al['acceptance_length']:.3f}" in page.locator("#table-acceptance").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    shutil.copy(files.html, ARTIFACTS / "report.html")
    page.close()
