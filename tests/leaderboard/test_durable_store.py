"""The Hub dataset as the store of record (issue 24): one atomic commit per entry, an outbox that
retries until it lands, and a restore that brings back whatever the local store lacks with its
own id, date, trust level and verification. Against a local Hub stand-in that fails half-way
(hub_faults.py); a refusing and a hanging Hub are in tests/space/test_durable_app.py."""
from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime, timezone

import pytest

from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.sync import MirrorSync, backoff
from speedbench.leaderboard.validate import restore_bundle, submit_bundle

hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
REPO = "speedbench/board"
VERIFICATION = {"verified_at": "2026-11-20T10:00:00Z", "verifier": "maintainer", "checks": []}


@pytest.fixture
def hub(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub_faults.FaultyHub() as running:
        yield running


def sync_for(store, hub_url, known_builds, clock=lambda: 1000.0) -> MirrorSync:
    from huggingface_hub import HfApi

    mirror = HubMirror(REPO, api=HfApi(endpoint=hub_url, token="hf_test"))
    return MirrorSync(store, mirror, lambda i, d, a: restore_bundle(i, d, a, store, known_builds), clock=clock)


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


def test_restore_brings_back_ids_dates_trust_and_fills_a_partial_store(seeded_store, known_builds, hub, tmp_path):
    first = seeded_store.entries()[0]
    seeded_store.set_trust(first.id, "verified", VERIFICATION)
    sync = sync_for(seeded_store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    sync.push_due()
    expected = {e.id: (e.submitted_at, e.trust, e.verification, e.metrics) for e in seeded_store.entries()}

    fresh = LeaderboardStore(tmp_path / "fresh.sqlite3")  # a Space restarted on an empty disk
    assert sync_for(fresh, hub.url, known_builds).restore_missing() == 3
    assert {e.id: (e.submitted_at, e.trust, e.verification, e.metrics) for e in fresh.entries()} == expected
    assert fresh.outbox() == []  # restored entries are on the Hub already

    partial = LeaderboardStore(tmp_path / "partial.sqlite3")  # a store that kept one entry only
    restore_bundle(first.id, json.loads(hub.repos[REPO][f"entries/{first.id}.json"]),
                   hub.repos[REPO][f"bundles/{first.id}.tar.gz"], partial, known_builds)
    assert sync_for(partial, hub.url, known_builds).restore_missing() == 2
    assert {e.id: e.submitted_at for e in partial.entries()} == {i: v[0] for i, v in expected.items()}
    fresh.close()
    partial.close()


def test_a_bundle_without_its_document_is_dated_by_its_first_request(known_builds, valid_bundle, hub, tmp_path):
    hub.put(REPO, {"bundles/sb-000000000001.tar.gz": valid_bundle})  # pushed by the old two-commit mirror
    store = LeaderboardStore(tmp_path / "restored.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    assert sync.restore_missing() == 1
    entry = store.get("sb-000000000001")
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
