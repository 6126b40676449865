"""The per-submitter upload quota (speedbench/leaderboard/quota.py), with a clock the test moves."""
from __future__ import annotations

from speedbench.leaderboard.quota import UploadQuota, submitter_of


def test_a_submitter_past_its_hourly_quota_waits_for_its_oldest_upload_to_leave_the_window():
    now = [1000.0]
    quota = UploadQuota(3, clock=lambda: now[0])
    assert [quota.take("addr:10.0.0.1") for _ in range(3)] == [None, None, None]
    now[0] += 600
    assert quota.take("addr:10.0.0.1") == 3600 - 600  # the first of the three leaves at 1000 + 3600
    assert quota.take("addr:10.0.0.2") is None  # another submitter is not held
    now[0] = 1000 + 3600
    assert quota.take("addr:10.0.0.1") is None  # the three at t=1000 have left; this one counts
    assert quota.take("addr:10.0.0.1") is None and quota.take("addr:10.0.0.1") is None
    assert quota.take("addr:10.0.0.1") == 3600


def test_the_oauth_identity_is_the_key_when_there_is_one():
    assert submitter_of("alice", "10.0.0.1") == "user:alice"
    assert submitter_of(None, "10.0.0.1") == "addr:10.0.0.1"
    assert submitter_of("", None) == "addr:unknown"
