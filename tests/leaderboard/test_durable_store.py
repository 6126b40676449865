"""The Hub dataset as the store of record (issue 24): one atomic commit per entry, an outbox that
retries until it lands, and a restore that brings back whatever the local store lacks with its
own id, date, trust level and verification. Against a local Hub stand-in that fails half-way
(hub_faults.py); a refusing and a hanging Hub are in tests/space/test_durable_app.py."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from datetime import datetime, timezone

import pytest

from speedbench.leaderboard import sync as sync_module
from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.sync import MirrorSync, backoff
from speedbench.leaderboard.store import entry_id_for
from speedbench.leaderboard.restore import restore_bundle
from speedbench.leaderboard.validate import parse_bundle, submit_bundle

hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
REPO = "speedbench/board"
VERIFICATION = {"verified_at": "2026-11-20T10:00:00Z", "verifier": "maintainer", "checks": []}


@pytest.fixture
def hub(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub_faults.FaultyHub() as running:
        yield running


def board_id(bundle: bytes, known_builds) -> str:
    """The id the board issues for a bundle's measurement (what a restore accepts)."""
    return entry_id_for(parse_bundle(bundle, known_builds).measurement_sha256)


def sync_for(store, hub_url, known_builds, clock=lambda: 1000.0) -> MirrorSync:
    from huggingface_hub import HfApi

    mirror = HubMirror(REPO, api=HfApi(endpoint=hub_url, token="hf_test"))
    return MirrorSync(store, mirror, lambda i, d, a, v: restore_bundle(i, d, a, store, known_builds, v), clock=clock)


def test_each_entry_lands_as_one_commit_of_its_bundle_and_document(seeded_store, known_builds, valid_bundle, hub):
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    assert sync.push_due() == 4 and seeded_store.outbox() == []
    assert len(hub.commits) == 4
    for commit in hub.commits:
        entry_id = commit[0].split("/")[1].split(".")[0]
        assert commit == [f"bundles/{entry_id}.tar.gz", f"entries/{entry_id}.json"]
    files = hub.repos[REPO]
    assert files[f"bundles/{entry.id}.tar.gz"] == valid_bundle
    document = json.loads(files[f"entries/{entry.id}.json"])
    assert (document["id"], document["submitted_at"], document["trust"]) == (entry.id, entry.submitted_at,
                                                                            "self-reported")
    assert document["archive_sha256"] == hashlib.sha256(valid_bundle).hexdigest()


def test_a_failed_push_stays_in_the_outbox_and_is_retried_until_it_lands(seeded_store, known_builds, hub):
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    hub.fail_commits = 2  # the Hub takes the upload, then fails the commit: nothing lands
    assert sync.push_due(now=1000.0) == 1 and hub.failed == 2
    waiting = seeded_store.outbox()
    assert [attempts for _, attempts, _, _ in waiting] == [1, 1] and "500" in waiting[0][2]
    assert sync.status().pending == 2 and sync.status().phase != "in step"
    assert sync.push_due(now=1000.0 + backoff(1) - 1) == 0  # not due yet
    hub.fail_commits = 1
    assert sync.push_due(now=1000.0 + backoff(1)) == 1  # one fails again, its wait doubles
    (_, attempts, _, _), = seeded_store.outbox()
    assert attempts == 2
    assert sync.push_due(now=1000.0 + backoff(1) + backoff(2)) == 1
    assert seeded_store.outbox() == [] and len(hub.commits) == 3
    assert {p for c in hub.commits for p in c} == {f"{kind}/{e.id}{ext}" for e in seeded_store.entries()
                                                   for kind, ext in (("bundles", ".tar.gz"), ("entries", ".json"))}


def test_a_verification_reaches_the_hub_without_sending_the_bundle_again(seeded_store, known_builds, hub):
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    sync.push_due()
    entry = seeded_store.entries()[0]
    seeded_store.set_trust(entry.id, "verified", VERIFICATION)
    assert sync.push_due() == 1 and hub.commits[-1] == [f"entries/{entry.id}.json"]
    document = json.loads(hub.repos[REPO][f"entries/{entry.id}.json"])
    assert document["trust"] == "verified" and document["verification"] == VERIFICATION


def test_restore_brings_back_ids_dates_and_fills_a_partial_store(seeded_store, known_builds, hub, tmp_path):
    """Ids and dates come back; trust never comes from the document: the verified entry is restored
    self-reported with a note (issue 32: a document written straight into the dataset said verified)."""
    first = seeded_store.entries()[0]
    seeded_store.set_trust(first.id, "verified", VERIFICATION)
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    sync.push_due()
    expected = {e.id: (e.submitted_at, "self-reported", None, e.metrics) for e in seeded_store.entries()}

    fresh = LeaderboardStore(tmp_path / "fresh.sqlite3")  # a Space restarted on an empty disk
    assert sync_for(fresh, hub.url, known_builds).restore_missing() == 3
    assert {e.id: (e.submitted_at, e.trust, e.verification, e.metrics) for e in fresh.entries()} == expected
    notes = {e.id: [w["code"] for w in e.warnings if w["code"].startswith("restored")] for e in fresh.entries()}
    assert notes == {e.id: ["restored.verification_unchecked"] if e.id == first.id else []
                     for e in seeded_store.entries()}
    assert fresh.outbox() == []  # restored entries are on the Hub already

    partial = LeaderboardStore(tmp_path / "partial.sqlite3")  # a store that kept one entry only
    restore_bundle(first.id, json.loads(hub.repos[REPO][f"entries/{first.id}.json"]),
                   hub.repos[REPO][f"bundles/{first.id}.tar.gz"], partial, known_builds)
    assert sync_for(partial, hub.url, known_builds).restore_missing() == 2
    assert {e.id: e.submitted_at for e in partial.entries()} == {i: v[0] for i, v in expected.items()}
    fresh.close()
    partial.close()


def test_a_bundle_without_its_document_is_dated_by_its_first_request(known_builds, valid_bundle, hub, tmp_path):
    entry_id = board_id(valid_bundle, known_builds)
    hub.put(REPO, {f"bundles/{entry_id}.tar.gz": valid_bundle})  # pushed by the old two-commit mirror
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 1
    entry = store.get(entry_id)
    first = datetime.fromtimestamp(1.7e9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # synthetic runs' start
    assert entry.submitted_at == first
    assert [w["code"] for w in entry.warnings if w["code"].startswith("restored")] == ["restored.no_entry_document"]
    store.close()


def test_a_bundle_that_does_not_match_its_document_is_not_restored(known_builds, valid_bundle, hub,
                                                                    tmp_path):
    document = {"id": "sb-00000000000f", "submitted_at": "2026-11-02T00:00:00Z", "trust": "verified",
                "archive_sha256": "0" * 64}
    hub.put(REPO, {"bundles/sb-00000000000f.tar.gz": valid_bundle,
                   "entries/sb-00000000000f.json": json.dumps(document).encode()})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 0 and store.count() == 0
    assert "archive_sha256" in sync.status().skipped[0]
    store.close()


def test_a_verification_made_while_its_entry_is_pushed_reaches_the_hub(seeded_store, known_builds, hub, monkeypatch):
    """A verify (another process on the same store) lands between the push's read of the entry and
    the end of its commit: the Hub got the entry as it was before, so it stays queued."""
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    entry = seeded_store.entries()[0]
    read = seeded_store.get

    def read_then_verified_elsewhere(entry_id):
        found = read(entry_id)
        if entry_id == entry.id and found.trust == "self-reported":
            seeded_store.set_trust(entry.id, "verified", VERIFICATION)
        return found

    monkeypatch.setattr(seeded_store, "get", read_then_verified_elsewhere)
    sync.push_due()
    sync.push_due()
    document = json.loads(hub.repos[REPO][f"entries/{entry.id}.json"])
    assert (document["trust"], document["verification"]) == ("verified", VERIFICATION)
    assert seeded_store.outbox() == []


def test_an_entry_submitted_again_before_the_restore_keeps_the_hub_s_date_not_its_trust(known_builds, valid_bundle, hub,
                                                                                   tmp_path, bundles):
    """The Space restarted on an empty disk and the submitter sent the same measurement again (as a
    zip this time) before the restore ran (a slow or unreachable Hub): the resubmission gets the
    entry's id, and its push must not overwrite the Hub's document (the original date and the
    verification were lost); the repo keeps one bundle of it, the one its document describes. The
    Hub document's trust is not adopted (issue 32): only a verification made here counts."""
    before = LeaderboardStore(tmp_path / "before.sqlite3")
    entry = submit_bundle(valid_bundle, before, known_builds, submitted_at="2026-11-02T00:00:00Z")
    before.set_trust(entry.id, "verified", VERIFICATION)
    pushed = sync_for(before, hub.url, known_builds)
    pushed.mirror.ensure_repo()
    assert pushed.push_due() == 1
    before.close()

    after = LeaderboardStore(tmp_path / "after.sqlite3")
    again = submit_bundle(bundles.as_zip(bundles.unpack(valid_bundle)), after, known_builds)
    assert again.id == entry.id and again.submitted_at != entry.submitted_at
    sync = sync_for(after, hub.url, known_builds)
    assert sync.restore_missing() == 0  # the id is in the store already
    sync.push_due()
    document = json.loads(hub.repos[REPO][f"entries/{entry.id}.json"])
    assert (document["submitted_at"], document["trust"], document["verification"]) == (
        "2026-11-02T00:00:00Z", "self-reported", None)
    local = after.get(entry.id)
    assert (local.submitted_at, local.trust, local.verification) == ("2026-11-02T00:00:00Z", "self-reported", None)
    assert after.outbox() == []
    assert sorted(p for p in hub.repos[REPO] if p.startswith("bundles/")) == [f"bundles/{entry.id}.zip"]
    assert document["archive_sha256"] == hashlib.sha256(hub.repos[REPO][f"bundles/{entry.id}.zip"]).hexdigest()
    restored = LeaderboardStore(tmp_path / "restored.sqlite3")  # and it comes back as it was
    assert sync_for(restored, hub.url, known_builds).restore_missing() == 1
    assert (restored.get(entry.id).submitted_at, restored.get(entry.id).trust) == ("2026-11-02T00:00:00Z",
                                                                                  "self-reported")
    after.close()
    restored.close()


def test_a_document_that_is_not_an_object_is_skipped_and_the_rest_restored(known_builds, valid_bundle, hub, tmp_path):
    """One unreadable entry document must not stop every restore (and with it every push) forever."""
    good = board_id(valid_bundle, known_builds)
    hub.put(REPO, {"bundles/sb-00000000000a.tar.gz": valid_bundle, "entries/sb-00000000000a.json": b"[1, 2]",
                   f"bundles/{good}.tar.gz": valid_bundle})
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 1
    assert [e.id for e in store.entries()] == [good]
    assert "sb-00000000000a: entries/sb-00000000000a.json is not a JSON object" in sync.status().skipped[0]
    store.close()


def test_a_verification_queued_by_another_process_reaches_the_hub_without_a_wake(seeded_store, known_builds, hub,
                                                                                  monkeypatch):
    """``python -m speedbench.leaderboard verify`` runs in its own process on the Space's store: its
    outbox row must reach the Hub although nothing wakes the app's sync thread (it waited for the
    next upload, and a restart on an empty disk in between lost the verification)."""
    monkeypatch.setattr(sync_module, "POLL_S", 0.05)
    sync = sync_for(seeded_store, hub.url, known_builds, clock=time.time)
    sync.mirror.ensure_repo()
    assert sync.push_due() == 3 and seeded_store.outbox() == []
    sync.start()
    assert sync.restored_once.wait(60)
    entry = seeded_store.entries()[0]
    other = LeaderboardStore(seeded_store.path)  # the verify process's own connection
    other.set_trust(entry.id, "verified", VERIFICATION)
    other.close()

    def verified_on_hub():
        return json.loads(hub.repos[REPO][f"entries/{entry.id}.json"])["trust"] == "verified"

    try:
        assert hub.wait_for(verified_on_hub, timeout=60)
    finally:
        sync.close()
