"""The board's start-up lifecycle in the core (speedbench.leaderboard.services), without a UI."""
from __future__ import annotations

from speedbench.leaderboard.admission import Budget
from speedbench.leaderboard.services import start_services
from speedbench.leaderboard.store import LeaderboardStore


def test_without_a_mirror_there_is_no_sync_and_no_note(tmp_path):
    services = start_services(tmp_path / "board.sqlite", [], Budget(), "", 7)
    assert services.sync is None and services.mirror_note() == ""
    assert services.store.entries() == []
    assert services.quota.per_hour == 7


def test_a_given_store_is_used_as_it_is(tmp_path):
    store = LeaderboardStore(tmp_path / "mine.sqlite")
    services = start_services(tmp_path / "other.sqlite", [], Budget(), "", 20, store=store)
    assert services.store is store
    assert not (tmp_path / "other.sqlite").exists()  # the path is not opened when a store is given
