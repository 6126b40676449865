"""The Hub dataset as a hostile input (issue 32): a document nested 200,000 levels deep, one of
hundreds of MiB, one written straight into the dataset saying verified, ids that the board never
issued (markup in a file name), dates that are not dates. Each is skipped or downgraded, reported,
and never stops the rest of the restore nor the pushes. Against the local Hub stand-in."""
from __future__ import annotations

import json
import sys
import time

import pytest

from speedbench.leaderboard.mirror import MAX_DOCUMENT_BYTES, HubMirror
from speedbench.leaderboard.store import LeaderboardStore, entry_id_for
from speedbench.leaderboard.sync import MirrorSync
from speedbench.leaderboard.restore import restore_bundle
from speedbench.leaderboard.validate import parse_bundle, submit_bundle

hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
REPO = "speedbench/board"


@pytest.fixture
def hub(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub_faults.FaultyHub() as running:
        yield running


def sync_for(store, hub_url, known_builds) -> MirrorSync:
    from huggingface_hub import HfApi

    mirror = HubMirror(REPO, api=HfApi(endpoint=hub_url, token="hf_test"))
    return MirrorSync(store, mirror, lambda i, d, a, v: restore_bundle(i, d, a, store, known_builds, v))


def board_id(bundle: bytes, known_builds) -> str:
    return entry_id_for(parse_bundle(bundle, known_builds).measurement_sha256)


def document(entry_id: str, **fields) -> bytes:
    return json.dumps({"id": entry_id, "submitted_at": "2026-11-02T00:00:00Z", **fields}).encode()


def test_a_document_nested_200000_deep_is_skipped_and_the_entries_after_it_restored(
        known_builds, seed_bundles, hub, tmp_path):
    """It sorts first (sb-000...), so a restore that stopped at it would restore nothing."""
    good = [board_id(b, known_builds) for b in seed_bundles[:2]]
    deep = b"[" * 200_000 + b"]" * 200_000
    hub.put(REPO, {"entries/sb-000000000000.json": deep, "bundles/sb-000000000000.tar.gz": seed_bundles[2],
                   **{f"bundles/{i}.tar.gz": b for i, b in zip(good, seed_bundles)},
                   **{f"entries/{i}.json": document(i) for i in good}})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 2
    assert sorted(e.id for e in store.entries()) == sorted(good)
    assert len(sync.status().skipped) == 1 and sync.status().skipped[0].startswith("sb-000000000000: ")
    assert "json.nesting" in sync.status().skipped[0]
    assert "1 file in the Hub dataset not restored" in sync.status().text()
    store.close()


def test_a_document_over_the_cap_is_skipped_without_being_downloaded(known_builds, valid_bundle, hub, tmp_path):
    entry_id = board_id(valid_bundle, known_builds)
    big = b'{"pad": "' + b"x" * (MAX_DOCUMENT_BYTES + 1) + b'"}'
    hub.put(REPO, {f"entries/{entry_id}.json": big, f"bundles/{entry_id}.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 0 and store.count() == 0
    assert f"over the {MAX_DOCUMENT_BYTES}-byte cap" in sync.status().skipped[0]
    assert not [r for r in hub.requests if r.endswith(f"entries/{entry_id}.json") and "/resolve/" in r]
    store.close()


def test_any_exception_of_one_entry_skips_it_only(known_builds, seed_bundles, hub, tmp_path):
    """Restore only skipped BundleRejected and ValueError; a RecursionError (or anything) stopped it."""
    ids = [board_id(b, known_builds) for b in seed_bundles[:2]]
    hub.put(REPO, {f"bundles/{i}.tar.gz": b for i, b in zip(ids, seed_bundles)})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    first = min(ids)

    def restore(entry_id, doc, archive, runs):
        if entry_id == first:
            raise RecursionError("maximum recursion depth exceeded")
        return restore_bundle(entry_id, doc, archive, store, known_builds, runs)

    sync.restore_entry = restore
    assert sync.restore_missing() == 1
    assert [e.id for e in store.entries()] == [max(ids)]
    assert sync.status().skipped == [f"{first}: RecursionError: maximum recursion depth exceeded"]
    store.close()


def test_a_restore_that_keeps_failing_never_holds_back_the_outbox(known_builds, valid_bundle, hub, tmp_path):
    """The listing fails every time (a Hub error): an upload accepted meanwhile still lands."""
    store = LeaderboardStore(tmp_path / "board.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    calls = []

    def failing_listing():
        calls.append(1)
        raise ConnectionError("the Hub is down for listings")

    sync.mirror.listing = failing_listing
    entry = submit_bundle(valid_bundle, store, known_builds)
    sync.start()
    try:
        assert hub.wait_for(lambda: f"entries/{entry.id}.json" in hub.repos[REPO], timeout=60)
        deadline = time.monotonic() + 60  # the outbox row is removed just after the commit landed
        while store.outbox() and time.monotonic() < deadline:
            sync._stop.wait(0.05)
        assert store.outbox() == []
        assert calls and not sync.restored_once.is_set()
        assert sync.status().phase == "unreachable" and "listings" in sync.status().last_error
    finally:
        sync.close()
    store.close()


def test_a_document_saying_verified_is_restored_self_reported_with_a_note(known_builds, valid_bundle, hub, tmp_path):
    """Written straight into the dataset (no verification ever ran here): never shown as verified."""
    entry_id = board_id(valid_bundle, known_builds)
    forged = document(entry_id, trust="verified", verification={"verifier": "anyone", "checks": []})
    hub.put(REPO, {f"entries/{entry_id}.json": forged, f"bundles/{entry_id}.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    assert sync_for(store, hub.url, known_builds).restore_missing() == 1
    entry = store.get(entry_id)
    assert (entry.trust, entry.verification, entry.submitted_at) == ("self-reported", None, "2026-11-02T00:00:00Z")
    assert [w["code"] for w in entry.warnings if w["code"].startswith("restored")] == [
        "restored.verification_unchecked"]
    store.close()


@pytest.mark.parametrize("name", ['<img src="http://evil.example/x.png">', "sb-0000000000a1[x](http://e)",
                                  "SB-00000000000A", "sb-00000000000g"])
def test_a_file_name_that_is_not_a_board_id_is_skipped_unread(known_builds, valid_bundle, hub, tmp_path, name):
    hub.put(REPO, {f"entries/{name}.json": document(name), f"bundles/{name}.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 0 and store.count() == 0
    assert sorted(sync.status().skipped) == sorted(f"{kind}/{name}{ext}: not a board entry id (sb- and 12 hex digits)"
                                                   for kind, ext in (("entries", ".json"), ("bundles", ".tar.gz")))
    assert not [r for r in hub.requests if "/resolve/" in r]
    store.close()


def test_an_id_that_is_not_its_measurement_s_is_never_taken(known_builds, valid_bundle, hub, tmp_path):
    """Well formed, but not what the board issues for this bundle (an older digest version's, or
    picked by whoever wrote the file): the entry is re-issued the id of its measurement, with a note."""
    hub.put(REPO, {"entries/sb-0123456789ab.json": document("sb-0123456789ab"),
                   "bundles/sb-0123456789ab.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 1 and sync.status().skipped == []
    expected = board_id(valid_bundle, known_builds)
    assert [e.id for e in store.entries()] == [expected]
    assert "sb-0123456789ab" in [w for w in store.get(expected).warnings if w["code"] == "restored.id_reissued"][0][
        "message"]
    store.close()


@pytest.mark.parametrize("date", ["<b>yesterday</b>", "2026-13-01T00:00:00Z", "2026-11-02", 20261102,
                                  "2026-11-02T00:00:00Z\n"])
def test_a_date_that_is_not_an_iso_date_is_replaced_by_the_first_request_s(known_builds, valid_bundle, hub,
                                                                            tmp_path, date):
    entry_id = board_id(valid_bundle, known_builds)
    hub.put(REPO, {f"entries/{entry_id}.json": json.dumps({"id": entry_id, "submitted_at": date}).encode(),
                   f"bundles/{entry_id}.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    assert sync_for(store, hub.url, known_builds).restore_missing() == 1
    entry = store.get(entry_id)
    first = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1.7e9))  # the synthetic runs' first request
    assert entry.submitted_at == first
    assert [w["code"] for w in entry.warnings if w["code"].startswith("restored")] == ["restored.no_date"]
    store.close()
