"""Best draft length over repeats: median, MAD and the uncertainty flag, checked by hand."""
from __future__ import annotations

from speedbench.sweep.choice import choose


def test_highest_median_wins_and_a_clear_gap_is_certain():
    # K=2: [100, 104, 110] median 104, |dev| = [4, 0, 6] -> MAD 4
    # K=4: [90, 91, 95]    median 91,  |dev| = [1, 0, 4] -> MAD 1
    # K=0: [50, 52, 51]    median 51
    choice = choose({2: [100.0, 104.0, 110.0], 4: [90.0, 91.0, 95.0], 0: [50.0, 52.0, 51.0]})
    assert (choice.best_k, choice.best.median, choice.best.mad) == (2, 104.0, 4.0)
    assert (choice.runner_up.k, choice.runner_up.median, choice.runner_up.mad) == (4, 91.0, 1.0)
    assert choice.uncertain is False  # 104 - 91 = 13 > 4 + 1


def test_overlapping_spreads_make_the_choice_uncertain():
    # K=3: median 100, MAD 5; K=2: median 97, MAD 2: gap 3 <= 7
    choice = choose({2: [95.0, 97.0, 99.0], 3: [95.0, 100.0, 105.0]})
    assert choice.best_k == 3 and choice.uncertain is True and "uncertain" in choice.note


def test_one_repeat_claims_nothing_about_spread_and_ties_go_to_the_smaller_k():
    choice = choose({4: [10.0], 2: [10.0]})
    assert choice.best_k == 2 and choice.uncertain is None and "spread not measured" in choice.note
    assert (choice.best.mad, choice.runner_up.mad) == (None, None)  # not 0: nothing was measured
    assert choose({3: [5.0], 0: []}).runner_up is None
