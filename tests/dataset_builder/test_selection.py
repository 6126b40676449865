"""Algorithm 1 (greedy + swap), the QP relaxation, random selection and FAISS de-duplication.

Expected values come from direct recomputation of the objective or from brute-force enumeration,
never from the functions under test.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from speedbench.dataset_builder.selection import select
from speedbench.dataset_builder.selection.brute_force import exact_minimum
from speedbench.dataset_builder.selection.dedup import near_duplicates
from speedbench.dataset_builder.selection.exact import (TIE_TOLERANCE, exact_objective, greedy_pick, selected_sum,
                                                        swap_pick)
from speedbench.dataset_builder.selection.greedy_swap import (apply_swap, greedy, greedy_swap_select, swap_delta,
                                                              swap_deltas, swap_refine)
from speedbench.dataset_builder.selection.objective import mean_pairwise_similarity, pairwise_similarity_sum
from speedbench.dataset_builder.selection.qp import project_capped_simplex, qp_relaxation, qp_select


def unit_rows(rng, n, d, shift=0.3):
    x = rng.normal(size=(n, d)) + shift   # a common direction makes similarities positive and varied
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def objective_by_loops(x, subset):
    return sum(float(x[i] @ x[j]) for i, j in combinations(subset, 2))


def test_objective_matches_explicit_pairs():
    x = unit_rows(np.random.default_rng(1), 9, 4)
    subset = [0, 3, 4, 8]
    assert pairwise_similarity_sum(x, subset) == pytest.approx(objective_by_loops(x, subset), abs=1e-12)
    assert mean_pairwise_similarity(x, subset) == pytest.approx(objective_by_loops(x, subset) / 6, abs=1e-12)


def test_greedy_follows_the_running_sums_by_hand():
    # Four unit vectors in the plane at 0, 10, 90 and 180 degrees. From 0 degrees the least similar
    # is 180 (cos = -1); then sums: 10 deg -> cos10 + cos170 = 0, 90 deg -> 0 + 0 = 0: tie -> lowest index (1).
    angles = np.deg2rad([0.0, 10.0, 90.0, 180.0])
    x = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    chosen = greedy(x, 3, np.random.default_rng(0), start=0).indices
    assert chosen.tolist() == [0, 3, 1]


@pytest.mark.parametrize("seed", range(6))
def test_o1_swap_delta_equals_recomputed_objective_change(seed):
    rng = np.random.default_rng(seed)
    x = unit_rows(rng, 40, 6)
    selection = greedy(x, 7, rng)
    deltas = swap_deltas(selection)
    for _ in range(30):
        position, candidate = int(rng.integers(7)), int(rng.integers(40))
        if candidate in selection.indices:
            assert np.isinf(deltas[candidate, position])
            continue
        before = objective_by_loops(x, selection.indices.tolist())
        after_subset = selection.indices.copy()
        after_subset[position] = candidate
        expected = objective_by_loops(x, after_subset.tolist()) - before
        assert swap_delta(selection, position, candidate) == pytest.approx(expected, abs=1e-10)
        assert deltas[candidate, position] == pytest.approx(expected, abs=1e-10)
    # Sums stay exact after applying swaps (they are updated, not recomputed).
    for position, candidate in [(0, next(c for c in range(40) if c not in selection.indices))]:
        apply_swap(x, selection, position, candidate)
        assert selection.objective == pytest.approx(objective_by_loops(x, selection.indices.tolist()), abs=1e-10)
        direct = x @ x[selection.indices].sum(axis=0)
        np.testing.assert_allclose(selection.similarity_sums, direct, atol=1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_swap_refinement_ends_in_a_local_optimum_checked_by_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    x = unit_rows(rng, 14, 5)
    selection = greedy_swap_select(x, 5, np.random.default_rng(seed))
    chosen = selection.indices.tolist()
    value = objective_by_loops(x, chosen)
    assert selection.objective == pytest.approx(value, abs=1e-10)
    for out in chosen:
        for candidate in set(range(14)) - set(chosen):
            swapped = [candidate if i == out else i for i in chosen]
            assert objective_by_loops(x, swapped) >= value - TIE_TOLERANCE - 1e-9
    # and never worse than greedy alone, never better than the exact optimum
    greedy_value = objective_by_loops(x, greedy(x, 5, np.random.default_rng(seed)).indices.tolist())
    optimum, _ = exact_minimum(x, 5)
    assert optimum - 1e-9 <= value <= greedy_value + 1e-9


def test_swap_refinement_improves_a_bad_start():
    rng = np.random.default_rng(7)
    x = unit_rows(rng, 60, 8, shift=0.8)
    selection = greedy(x, 6, rng)
    # Replace the greedy choice by the 6 most similar rows to row 0: a poor start.
    worst = np.argsort(-(x @ x[0]))[:6]
    for position, candidate in enumerate(worst):
        if candidate not in selection.indices:
            apply_swap(x, selection, position, int(candidate))
    before = selection.objective
    swap_refine(x, selection)
    assert selection.objective < before
    assert selection.objective_trace == sorted(selection.objective_trace, reverse=True)


def test_exact_minimum_on_a_hand_made_pool():
    # Rows 0 and 1 are identical; 2 is opposite to them; 3 is orthogonal. Best pair: {0, 2} or {1, 2} (cos = -1).
    x = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    value, subset = exact_minimum(x, 2)
    assert value == pytest.approx(-1.0) and subset == (0, 2)


def test_capped_simplex_projection_is_feasible_and_optimal():
    rng = np.random.default_rng(3)
    v = rng.normal(size=50) * 2
    w = project_capped_simplex(v, 7)
    assert w.sum() == pytest.approx(7, abs=1e-8) and w.min() >= 0 and w.max() <= 1
    # Optimality (KKT): w = clip(v - tau) for one tau.
    free = (w > 1e-9) & (w < 1 - 1e-9)
    taus = v[free] - w[free]
    assert np.ptp(taus) < 1e-6


def test_qp_relaxation_separates_two_clusters():
    # 20 copies near e1 and 20 near -e1, choose 10: the relaxed optimum balances both clusters (sum x = 0).
    rng = np.random.default_rng(4)
    base = np.concatenate([np.tile([1.0, 0, 0], (20, 1)), np.tile([-1.0, 0, 0], (20, 1))])
    x = base + rng.normal(scale=0.01, size=base.shape)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = qp_relaxation(x, 10)
    assert w.sum() == pytest.approx(10, abs=1e-6)
    assert w[:20].sum() == pytest.approx(5, abs=0.05)
    chosen = qp_select(x, 10)
    assert len(chosen) == 10 and len(set(chosen.tolist())) == 10


def test_selectors_agree_on_shape_and_are_seeded():
    x = unit_rows(np.random.default_rng(5), 200, 16)
    for selector in ("greedy_swap", "greedy", "qp", "random"):
        a, b = select(x, 20, selector, seed=11), select(x, 20, selector, seed=11)
        assert a.tolist() == b.tolist() and len(set(a.tolist())) == 20
    ours = pairwise_similarity_sum(x, select(x, 20, "greedy_swap", seed=1))
    rand = np.mean([pairwise_similarity_sum(x, select(x, 20, "random", seed=s)) for s in range(5)])
    assert ours < rand
    with pytest.raises(ValueError, match="unknown selector"):
        select(x, 3, "nope")
    with pytest.raises(ValueError, match="cannot choose"):
        select(x[:3], 5, "greedy_swap")


def test_near_duplicates_keep_the_first_of_each_group():
    rng = np.random.default_rng(6)
    x = unit_rows(rng, 6, 32, shift=0.0)
    pool = np.vstack([x, x[1] + 1e-4, x[3]])          # rows 6 and 7 duplicate rows 1 and 3
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    assert np.flatnonzero(near_duplicates(pool, 0.99)).tolist() == [6, 7]
    assert not near_duplicates(pool, 1.0).any()


# ---- the near-tie rule (issue 12, item 5) -------------------------------------------------------

def perturbed(x, eps, seed):
    y = x + eps * np.random.default_rng(seed).standard_normal(x.shape)
    return (y / np.linalg.norm(y, axis=1, keepdims=True)).astype(np.float32)


def pool_with_ties(seed):
    """30 random unit vectors, each present three times (exact copies, as near-identical prompts
    embed), shuffled: every greedy step and many swaps have exact ties among copies."""
    rng = np.random.default_rng(seed)
    base = unit_rows(rng, 30, 16)
    x = np.repeat(base, 3, axis=0)
    return x[rng.permutation(len(x))].astype(np.float32)


def test_greedy_pick_takes_the_lowest_index_within_the_tolerance():
    # Scores x_j . s with s = e1: rows 2, 5, 7 score -0.5, -0.5 + 0.4 tol, -0.5 - 0.4 tol; row 1 far above.
    t = TIE_TOLERANCE
    scores = {1: 0.3, 2: -0.5, 5: -0.5 + 0.4 * t, 7: -0.5 - 0.4 * t}
    x = np.zeros((8, 2))
    for row, value in scores.items():
        x[row] = [value, np.sqrt(1 - value ** 2)]
    s = np.array([1.0, 0.0])
    assert greedy_pick(x, [1, 2, 5, 7], s) == 2          # 2 and 5 are within t of the best (7)
    assert greedy_pick(x, [1, 5, 7], s) == 5
    assert greedy_pick(x, [1, 2, 5, 7], s, tolerance=0.0) == 7


def test_swap_pick_needs_a_gain_above_the_tolerance_and_breaks_ties_by_index():
    # S = {0, 1} = {e1, e2}, f(S) = 0. Swapping position 0 (e1) for c gives f = x_c . e2, swapping
    # position 1 gives x_c . e1 = 0 for the candidates below, so Delta(0, c) = x_c[1].
    t = TIE_TOLERANCE

    def candidate(second):
        return [0.0, second, np.sqrt(1.0 - second ** 2)]

    chosen = np.array([0, 1])
    pairs = ([0, 0, 1, 1], [2, 3, 2, 3])
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], candidate(-0.5 * t), candidate(-0.5 * t)])
    s = selected_sum(x, chosen)
    assert swap_pick(x, chosen, s, *pairs) is None                 # gains 0.5 t: below the tolerance
    assert swap_pick(x, chosen, s, *pairs, tolerance=0.0)[:2] == (0, 2)
    x[2], x[3] = candidate(-5.0 * t), candidate(-5.5 * t)          # 3 gains 0.5 t more: a near-tie
    position, chosen_candidate, delta = swap_pick(x, chosen, s, *pairs)
    assert (position, chosen_candidate) == (0, 2)
    assert delta == pytest.approx(-5.0 * t, abs=1e-12)
    assert swap_pick(x, chosen, s, *pairs, tolerance=0.0)[:2] == (0, 3)


@pytest.mark.parametrize("seed", range(4))
def test_a_1e6_perturbation_leaves_the_selection_identical_on_a_pool_with_ties(seed):
    x = pool_with_ties(seed)
    chosen = select(x, 12, "greedy_swap", seed=seed)
    for trial in range(3):
        assert select(perturbed(x, 1e-6, 100 * seed + trial), 12, "greedy_swap", seed=seed).tolist() == chosen.tolist()


def test_without_the_rule_the_same_perturbation_changes_the_selection():
    # The check above can fail: plain argmin (the old swap tolerance 1e-9) follows the noise among copies.
    changed = 0
    for seed in range(4):
        x = pool_with_ties(seed)
        a = greedy_swap_select(x, 12, np.random.default_rng(seed), tolerance=1e-9).indices
        for trial in range(3):
            b = greedy_swap_select(perturbed(x, 1e-6, 100 * seed + trial), 12, np.random.default_rng(seed),
                                   tolerance=1e-9).indices
            changed += sorted(a.tolist()) != sorted(b.tolist())
    assert changed > 0


def test_exact_objective_matches_the_loops():
    x = unit_rows(np.random.default_rng(9), 20, 7)
    assert exact_objective(x, [3, 1, 8, 15]) == pytest.approx(objective_by_loops(x, [3, 1, 8, 15]), abs=1e-12)
