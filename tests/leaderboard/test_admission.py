"""Admission control (issue 24): one shared limit on concurrent validations, a CPU and memory budget
enforced while a validation runs, and duplicates found before the expensive work. No test waits on
a clock: each waits on the admission's own counters, or on the validation it stops."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from speedbench.leaderboard import validate
from speedbench.leaderboard.admission import Admission, Budget, declared_unpacked, reservation, submit
from speedbench.leaderboard.archive import MiB, ArchiveLimits
from speedbench.leaderboard.schema import BundleRejected

DEADLINE_S = 120  # only how long a broken test may take to fail, never a measured figure


def _spin_until_stopped() -> int:
    """Burn CPU until the watchdog raises in this thread (or give up after a bounded loop)."""
    n = 0
    while n < 10**10:
        n += 1
    return n


def test_one_limit_holds_however_many_callers_wait():
    admission = Admission(Budget(max_concurrent=2))
    gate = threading.Event()

    def validate_one(_):
        with admission.slot(0):
            gate.wait(DEADLINE_S)

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(validate_one, i) for i in range(8)]
        assert admission.wait_for(lambda a: a.running == 2 and a.waiting == 6, DEADLINE_S)
        gate.set()
        for future in futures:
            future.result(DEADLINE_S)
    assert admission.peak_running == 2 and admission.running == admission.waiting == admission.reserved == 0


def test_memory_reservations_queue_a_large_upload_behind_a_running_one():
    admission = Admission(Budget(max_concurrent=4, memory_bytes=1000 * MiB))
    gate = threading.Event()

    def hold(need):
        with admission.slot(need):
            gate.wait(DEADLINE_S)

    with ThreadPoolExecutor(max_workers=3) as pool:
        first = pool.submit(hold, 600 * MiB)
        assert admission.wait_for(lambda a: a.running == 1, DEADLINE_S)
        second = pool.submit(hold, 600 * MiB)  # 1,200 MiB together: waits
        huge = pool.submit(hold, 5000 * MiB)  # larger than the budget: runs alone, later
        assert admission.wait_for(lambda a: a.running == 1 and a.waiting == 2, DEADLINE_S)
        gate.set()
        for future in (first, second, huge):
            future.result(DEADLINE_S)
    assert admission.peak_reserved <= 1000 * MiB and admission.peak_running == 1


def test_the_cpu_budget_stops_a_validation_while_it_runs():
    admission = Admission(Budget(cpu_seconds=0.0))
    with pytest.raises(BundleRejected) as caught:
        with admission.slot(0):
            _spin_until_stopped()
    assert caught.value.rule == "budget.cpu" and "CPU seconds" in str(caught.value)
    assert admission.running == 0


def test_the_memory_budget_stops_the_largest_running_validation():
    admission = Admission(Budget(rss_limit_bytes=1))  # any process is above it
    with pytest.raises(BundleRejected) as caught:
        with admission.slot(10 * MiB):
            _spin_until_stopped()
    assert caught.value.rule == "budget.memory"


def test_a_stopped_upload_leaves_the_store_unchanged(seeded_store, known_builds, valid_bundle):
    before = seeded_store.snapshot()
    with pytest.raises(BundleRejected) as caught:
        submit(valid_bundle, seeded_store, known_builds, ArchiveLimits(), Admission(Budget(rss_limit_bytes=1)))
    assert caught.value.rule == "budget.memory"
    assert seeded_store.snapshot() == before


def test_an_archive_is_held_to_the_size_it_declares(valid_bundle, bundles):
    declared = declared_unpacked(valid_bundle)
    files = bundles.unpack(valid_bundle)
    assert declared >= sum(len(v) for v in files.values())  # members plus tar headers
    lying = valid_bundle[:-4] + (1000).to_bytes(4, "little")  # says 1,000 bytes
    need, held = reservation(lying, ArchiveLimits())
    assert held.max_total_bytes == 1000
    with pytest.raises(BundleRejected) as caught:
        validate.parse_bundle(lying, None, held)
    assert caught.value.rule in ("archive.unpacked_size", "archive.corrupt")  # the cap, or the trailer


def test_identical_uploads_at_once_each_get_their_own_answer(seeded_store, known_builds, valid_bundle):
    admission = Admission(Budget(max_concurrent=1))
    gate = threading.Event()
    real_parse = validate.parse_bundle

    def parse_after_gate(*args, **kwargs):
        gate.wait(DEADLINE_S)
        return real_parse(*args, **kwargs)

    def send(_):
        try:
            return submit(valid_bundle, seeded_store, known_builds, ArchiveLimits(), admission).id
        except BundleRejected as exc:
            return f"rejected {exc.rule}: {exc}"

    validate.parse_bundle, before = parse_after_gate, seeded_store.count()
    try:
        with ThreadPoolExecutor(max_workers=5) as pool:
            futures = [pool.submit(send, i) for i in range(5)]
            # one validates (held at the gate), four wait for its answer without taking a slot
            assert admission.wait_for(lambda a: a.running == 1, DEADLINE_S)
            gate.set()
            answers = [f.result(DEADLINE_S) for f in futures]
    finally:
        validate.parse_bundle = real_parse
    accepted = [a for a in answers if not a.startswith("rejected")]
    assert len(accepted) == 1 and seeded_store.count() == before + 1
    assert all(a.startswith("rejected duplicate.measurement") and accepted[0] in a
               for a in answers if a not in accepted)
    assert admission.peak_running == 1


def test_the_same_measurement_packed_twice_at_once_is_measured_once(seeded_store, known_builds, valid_bundle,
                                                                     bundles):
    admission = Admission(Budget(max_concurrent=2))
    as_zip = bundles.as_zip(bundles.unpack(valid_bundle))
    calls = []
    real = validate.compute_entry_metrics

    def counted(bundle):
        calls.append(bundle.measurement_sha256)
        return real(bundle)

    validate.compute_entry_metrics = counted
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda data: _answer(data, seeded_store, known_builds, admission),
                                    [valid_bundle, as_zip]))
    finally:
        validate.compute_entry_metrics = real
    assert sorted(a.split(":")[0] for a in answers) == ["accepted", "rejected duplicate.measurement"]
    assert len(calls) == 1  # the duplicate was found before any metric


def _answer(data, store, known_builds, admission) -> str:
    try:
        return f"accepted: {submit(data, store, known_builds, ArchiveLimits(), admission).id}"
    except BundleRejected as exc:
        return f"rejected {exc.rule}: {exc}"


def test_a_zip_listing_more_members_than_allowed_is_refused_before_its_directory_is_parsed(
        tmp_path, seeded_store, known_builds, monkeypatch):
    """A zip's central directory is parsed into one object per member (a 64 MiB upload lists about
    640,000: 5 CPU seconds and 340 MiB, before the admission's slot and its budgets); the end
    record says how many there are and how large the directory is, so too many are refused first."""
    import zipfile

    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(1000):
            archive.writestr(f"m{i}.json", b"")

    def parsed(self):
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", parsed)
    with pytest.raises(BundleRejected) as caught:
        submit(path, seeded_store, known_builds, ArchiveLimits(), Admission())
    assert caught.value.rule == "archive.members" and "more than 256 members" in str(caught.value)
