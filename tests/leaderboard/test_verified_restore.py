"""A verified entry survives a restore only when its verification re-checks (issue 32): the
verification's runs travel to the Hub dataset with the entry (``verifications/<id>.tar.gz``, in the
same commit as the verified document) and a restore re-runs every check of ``verify`` on them, with
the board's tolerances. Without them, with other runs, or with runs that no longer reproduce the
entry, it is restored self-reported with a note. And an entry whose id the board no longer issues
for its measurement (a store of before measurement digests named entries by their bundle's hash)
is re-issued the id of its measurement. Against the local Hub stand-in."""
from __future__ import annotations

import hashlib
import json
import sys
import time

import pytest

from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.restore import restore_bundle
from speedbench.leaderboard.store import LeaderboardStore, entry_id_for
from speedbench.leaderboard.sync import MirrorSync
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import METRICS_VERSION, compute_entry_metrics, parse_bundle, submit_bundle
from speedbench.leaderboard.verify import verify_entry

hub_faults = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("hub_faults")
REPO = "speedbench/board"
META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
        "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}
ENGINE = SimulatedEngine(rates=(0.75, 0.6, 0.5))


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


@pytest.fixture(scope="module")
def runs(make_entry_runs):
    """(the entry's runs, a maintainer's independent rerun made after it, a rerun that disagrees)."""
    later = time.time() + 1
    return (make_entry_runs(ENGINE, seed=911), make_entry_runs(ENGINE, seed=912, started_unix_s=later),
            make_entry_runs(SimulatedEngine(rates=(0.4, 0.3, 0.2)), seed=913, started_unix_s=later))


@pytest.fixture
def verified(runs, known_builds, hub, tmp_path):
    """A store with one entry verified by an independent rerun, pushed to the Hub: (store, entry id, sync)."""
    (sd, base), (fresh_sd, fresh_base), _ = runs
    store = LeaderboardStore(tmp_path / "board.sqlite3")
    entry = submit_bundle(pack_bundle(sd, META, base), store, known_builds, submitted_at="2026-11-02T00:00:00Z")
    ok, checks = verify_entry(store, entry, known_builds, fresh_sd, fresh_base, verifier="maintainer A")
    assert ok, [c for c in checks if not c["ok"]]
    sync = sync_for(store, hub.url, known_builds)
    sync.mirror.ensure_repo()
    assert sync.push_due() == 1
    yield store, entry.id, sync
    store.close()


def restored(hub, known_builds, tmp_path, name="fresh"):
    """A Space restarted on an empty disk: (its store, the sync that restored it)."""
    store = LeaderboardStore(tmp_path / f"{name}.sqlite3")
    sync = sync_for(store, hub.url, known_builds)
    sync.restore_missing()
    return store, sync


def notes(entry) -> list[str]:
    return [w["message"] for w in entry.warnings if w["code"] == "restored.verification_unchecked"]


def test_the_verification_runs_land_with_the_verified_document_and_re_check_on_restore(
        verified, runs, hub, known_builds, tmp_path):
    store, entry_id, _ = verified
    (_, _), (fresh_sd, fresh_base), _ = runs
    packed = store.archive(entry_id, "verifications")
    assert hub.commits[-1] == [f"bundles/{entry_id}.tar.gz", f"entries/{entry_id}.json",
                               f"verifications/{entry_id}.tar.gz"]
    assert hub.repos[REPO][f"verifications/{entry_id}.tar.gz"] == packed
    # the stored runs are the maintainer's folders, packed (their measurement is the record's)
    fresh_digest = parse_bundle(pack_bundle(fresh_sd, META, fresh_base), known_builds).measurement_sha256
    assert parse_bundle(packed, known_builds).measurement_sha256 == fresh_digest

    fresh, sync = restored(hub, known_builds, tmp_path)
    entry, before = fresh.get(entry_id), store.get(entry_id)
    assert sync.status().skipped == [] and entry.trust == "verified" and notes(entry) == []
    record = entry.verification
    assert (record["verifier"], record["verified_at"]) == (before.verification["verifier"],
                                                           before.verification["verified_at"])
    assert record["measurement_sha256"] == fresh_digest
    assert record["runs_archive_sha256"] == hashlib.sha256(packed).hexdigest()
    assert [c["figure"] for c in record["checks"]] == [c["figure"] for c in before.verification["checks"]]
    assert all(c["ok"] for c in record["checks"]) and fresh.archive(entry_id, "verifications") == packed
    fresh.close()


def test_without_its_runs_a_verified_document_is_restored_self_reported(verified, hub, known_builds, tmp_path):
    _, entry_id, _ = verified
    del hub.repos[REPO][f"verifications/{entry_id}.tar.gz"]
    fresh, _ = restored(hub, known_builds, tmp_path)
    entry = fresh.get(entry_id)
    assert (entry.trust, entry.verification) == ("self-reported", None)
    assert notes(entry) == ["the Hub copy's document says verified, but its verification runs are not in the Hub "
                            "dataset: the entry is self-reported until a maintainer verifies it again"]
    fresh.close()


def _forge(hub, entry_id: str, packed: bytes, **record) -> None:
    """What anyone with write access to the dataset can do: other runs, a record that names them."""
    path = f"entries/{entry_id}.json"
    document = json.loads(hub.repos[REPO][path])
    document["verification"] = {**document["verification"], "runs_archive_sha256": hashlib.sha256(packed).hexdigest(),
                                **record}
    hub.put(REPO, {path: json.dumps(document).encode(), f"verifications/{entry_id}.tar.gz": packed})


def test_runs_that_do_not_reproduce_the_entry_are_not_a_verification(verified, runs, hub, known_builds, tmp_path):
    """The record's checks say ok and its tolerances are wide: both are recomputed, never read."""
    _, entry_id, _ = verified
    _, _, (worse_sd, worse_base) = runs
    _forge(hub, entry_id, pack_bundle(worse_sd, META, worse_base), tolerances={"al_abs": 100.0, "al_rel": 100.0})
    fresh, _ = restored(hub, known_builds, tmp_path)
    entry = fresh.get(entry_id)
    assert entry.trust == "self-reported" and fresh.archive(entry_id, "verifications") is None
    assert "its verification runs no longer pass: acceptance_length," in notes(entry)[0]
    fresh.close()


def test_the_entry_s_own_runs_are_not_a_verification(verified, runs, hub, known_builds, tmp_path):
    _, entry_id, _ = verified
    (sd, base), _, _ = runs
    _forge(hub, entry_id, pack_bundle(sd, META, base))
    fresh, _ = restored(hub, known_builds, tmp_path)
    entry = fresh.get(entry_id)
    assert entry.trust == "self-reported"
    assert "independent: no request copied from the entry's runs" in notes(entry)[0]
    fresh.close()


@pytest.mark.parametrize("record, why", [
    ({"verified_at": "yesterday"}, "no ISO date or no plain verifier name"),
    ({"verifier": "a\nb"}, "no ISO date or no plain verifier name"),
    ({"verifier": "x" * 121}, "no ISO date or no plain verifier name"),
    ({"runs_archive_sha256": "0" * 64}, "not the ones its record names (runs_archive_sha256)")])
def test_a_record_that_does_not_hold_together_is_not_a_verification(verified, hub, known_builds, tmp_path,
                                                                    record, why):
    store, entry_id, _ = verified
    packed = store.archive(entry_id, "verifications")
    path = f"entries/{entry_id}.json"
    document = json.loads(hub.repos[REPO][path])
    document["verification"].update(record)
    hub.put(REPO, {path: json.dumps(document).encode()})
    assert hub.repos[REPO][f"verifications/{entry_id}.tar.gz"] == packed
    fresh, _ = restored(hub, known_builds, tmp_path)
    entry = fresh.get(entry_id)
    assert entry.trust == "self-reported" and why in notes(entry)[0]
    fresh.close()


def test_an_id_of_an_older_store_is_re_issued_the_id_of_its_measurement(runs, known_builds, hub, tmp_path):
    """A store of before measurement digests named an entry by its bundle's hash (what ``add`` does
    without a digest) and pushed it so; a restore re-issues it, pushes it under its new id, and a
    second restore, finding both in the dataset, adds it once and reports nothing."""
    (sd, base), _, _ = runs
    bundle = pack_bundle(sd, META, base)
    parsed = parse_bundle(bundle, known_builds)
    old = LeaderboardStore(tmp_path / "old.sqlite3")
    entry = old.add(bundle_sha256=parsed.bundle_sha256, archive_sha256=parsed.archive_sha256, archive=bundle,
                    schema_version=parsed.schema_version, metadata=parsed.metadata.to_dict(),
                    metrics=compute_entry_metrics(parsed), metrics_version=METRICS_VERSION,
                    submitted_at="2026-10-01T00:00:00Z")
    new_id = entry_id_for(parsed.measurement_sha256)
    assert entry.id == entry_id_for(parsed.bundle_sha256) != new_id
    sync = sync_for(old, hub.url, known_builds)
    sync.mirror.ensure_repo()
    assert sync.push_due() == 1

    fresh, fresh_sync = restored(hub, known_builds, tmp_path)
    assert [e.id for e in fresh.entries()] == [new_id] and fresh_sync.status().skipped == []
    restored_entry = fresh.get(new_id)
    assert restored_entry.submitted_at == "2026-10-01T00:00:00Z"
    assert [w["message"] for w in restored_entry.warnings if w["code"] == "restored.id_reissued"] == [
        f"the Hub dataset holds this entry as {entry.id}, an id the board no longer issues for its measurement "
        f"(an older digest version): re-issued as {new_id}"]
    assert [row[0] for row in fresh.outbox()] == [new_id]  # queued under its new id, with its bundle
    assert fresh_sync.push_due() == 1
    assert {f"entries/{new_id}.json", f"bundles/{new_id}.tar.gz", f"entries/{entry.id}.json"} <= set(hub.repos[REPO])

    again, again_sync = restored(hub, known_builds, tmp_path, "again")
    assert [e.id for e in again.entries()] == [new_id] and again_sync.status().skipped == []
    for store in (old, fresh, again):
        store.close()
