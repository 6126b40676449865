"""Plausibility of load points (issue 32): concurrency 2^62, an HTML load-point label and a "c1"
point at hundreds of achieved concurrency were accepted. Each is refused by its rule
(speedbench/leaderboard/load_points.py) and the store is left unchanged."""
from __future__ import annotations

import pytest

from speedbench.leaderboard.load_points import MAX_CONCURRENCY, check_label
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.validate import submit_bundle


def edit_one(B, bundle: bytes, run: str = "tp1k", index: int = 2, **changes) -> bytes:
    files = B.unpack(bundle)
    rows = B.records(files, run)
    rows[index] = {**rows[index], **changes}
    return B.repack(B.with_records(files, run, rows))


@pytest.mark.parametrize("label, requested", [("c1", 1), ("c16", None), ("c65536", 65536), ("r2", None),
                                              ("r0.5", None), ("r1e+03", None)])
def test_the_labels_the_client_writes_pass(label, requested):
    check_label(label, requested, "runs/x/records.jsonl line 1")


@pytest.mark.parametrize("label, requested, rule", [
    ("<img src=x onerror=alert(1)>", 1, "point.label"), ("c0", None, "point.label"), ("c01", 1, "point.label"),
    ("r0", None, "point.label"), ("c 1", 1, "point.label"), ("c4611686018427387904", None, "point.label"),
    ("c65537", None, "point.concurrency"), ("c1", 2**62, "point.concurrency"), ("c1", 5, "point.concurrency"),
    ("r2", MAX_CONCURRENCY + 1, "point.concurrency")])
def test_labels_and_concurrencies_that_are_not_plausible_are_refused(label, requested, rule):
    with pytest.raises(BundleRejected) as caught:
        check_label(label, requested, "runs/x/records.jsonl line 1")
    assert caught.value.rule == rule


def test_an_html_label_in_a_bundle_is_refused_at_its_line(seeded_store, known_builds, valid_bundle, bundles):
    data = edit_one(bundles, valid_bundle, run_point='<b onmouseover="x">c1</b>')
    bundles.assert_rejected(seeded_store, known_builds, data, "point.label", "run_point", "line 3")


def test_concurrency_two_to_the_62_in_a_bundle_is_refused(seeded_store, known_builds, valid_bundle, bundles):
    data = edit_one(bundles, valid_bundle, requested_concurrency=2**62)
    bundles.assert_rejected(seeded_store, known_builds, data, "point.concurrency", "requested_concurrency", "line 3")


def test_a_c1_point_whose_requests_all_overlap_is_refused(seeded_store, known_builds, valid_bundle, bundles):
    """Every request of the c1 point moved to start at the same instant (each record stays consistent
    in itself): 15 requests in flight at once in a closed loop of one worker."""
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "tp1k")
    origin = min(r["scheduled_ns"] for r in rows)
    for r in rows:
        shift = origin - r["scheduled_ns"]
        r["scheduled_ns"] += shift
        r["send_ns"] += shift
        r["end_ns"] += shift
        r["chunk_ns"] = [t + shift for t in r["chunk_ns"]]
    measured = [r for r in rows if not r["warmup"] and not r["error"] and r["run_point"] == "c1"]
    # Little's law as the board's latency summary defines it: E2E from the scheduled send to the
    # last chunk, over the span from the first scheduled send to the last chunk; computed here
    e2e = [(r["chunk_ns"][-1] - r["scheduled_ns"]) / 1e9 for r in measured]
    span = (max(r["chunk_ns"][-1] for r in measured) - min(r["scheduled_ns"] for r in measured)) / 1e9
    achieved = sum(e2e) / span
    assert achieved > 1.1 * 1 + 1
    data = bundles.repack(bundles.with_records(files, "tp1k", rows))
    error = bundles.assert_rejected(seeded_store, known_builds, data, "point.achieved_above_requested")
    assert f"achieved concurrency {achieved:.1f} is above the requested 1" in str(error)


def test_the_valid_bundle_still_passes(seeded_store, known_builds, valid_bundle):
    assert submit_bundle(valid_bundle, seeded_store, known_builds).id.startswith("sb-")
