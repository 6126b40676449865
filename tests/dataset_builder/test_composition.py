"""Composition rules: the Multilingual task cap and language count, the hard share, and their repair.

The repair is checked against an independent brute force: after ``enforce`` the rules hold and no
single swap that keeps them lowers f(S) = sum_{i<j in S} x_i . x_j by more than the tolerance.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from speedbench.dataset_builder.qualitative import composition
from speedbench.dataset_builder.qualitative.composition import Rules, enforce, rules_for, violations
from speedbench.dataset_builder.qualitative.pools import collect_candidates
from speedbench.dataset_builder.selection import select
from speedbench.dataset_builder.selection.exact import TIE_TOLERANCE
from speedbench.dataset_builder.sources import SourceFiles
from speedbench.schema import DatasetRow


def _f(x: np.ndarray, chosen) -> float:
    rows = x[np.asarray(chosen)].astype(np.float64)
    return float(sum(rows[a] @ rows[b] for a, b in itertools.combinations(range(len(rows)), 2)))


def _meets(rules: Rules, chosen) -> bool:
    counts = np.bincount(rules.groups[chosen], minlength=len(rules.caps))
    languages = len(set(rules.languages[chosen].tolist())) if rules.languages is not None else 0
    return bool((counts <= rules.caps).all()) and languages >= rules.min_languages


def _pool(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    groups = (np.arange(n) >= n // 2).astype(np.int64)
    x[groups == 1] += 3.0 * rng.normal(size=d) / np.sqrt(d) * 4   # group 1 clustered: its rows are similar
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    languages = rng.integers(0, 12, n)
    return x.astype(np.float32), groups, languages


def test_cap_repair_then_no_allowed_swap_improves():
    x, groups, _ = _pool(60, 8, seed=3)
    groups = 1 - groups                     # the spread-out rows form group 1, which the selector loves
    rules = Rules("t", groups, np.array([10, 3]), ("a", "b"))
    chosen = select(x, 10, "greedy_swap", seed=0)
    assert violations(rules, chosen)        # the unconstrained selection breaks the cap
    fixed, swaps = enforce(x, chosen, rules)
    assert swaps > 0 and violations(rules, fixed) == [] and len(set(fixed.tolist())) == 10
    best = _f(x, fixed)
    outside = sorted(set(range(len(x))) - set(fixed.tolist()))
    for out, new in itertools.product(fixed.tolist(), outside):
        trial = sorted(set(fixed.tolist()) - {out} | {new})
        if _meets(rules, np.array(trial)):
            assert _f(x, trial) >= best - TIE_TOLERANCE, (out, new)


def test_language_coverage_is_repaired_without_breaking_caps():
    x, groups, languages = _pool(200, 16, seed=5)
    languages[:150] = 0                     # most rows share one language
    rules = Rules("t", groups, np.array([20, 20]), ("a", "b"), languages, 10)
    chosen = np.arange(20)                  # 20 rows, all language 0
    fixed, _ = enforce(x, chosen, rules)
    assert len(set(languages[fixed].tolist())) >= 10
    assert (np.bincount(groups[fixed], minlength=2) <= 20).all()


def test_a_selection_that_meets_the_rules_and_is_swap_optimal_is_kept():
    x, groups, languages = _pool(80, 8, seed=7)
    rules = Rules("t", groups, np.array([12, 12]), ("a", "b"), languages, 2)
    chosen = select(x, 12, "greedy_swap", seed=1)
    if violations(rules, chosen):
        pytest.skip("this seed's selection breaks the rules")
    fixed, swaps = enforce(x, chosen, rules)
    assert swaps == 0 and fixed.tolist() == sorted(chosen.tolist())


def test_enforce_is_stable_under_a_1e6_perturbation():
    x, groups, languages = _pool(300, 16, seed=11)
    rules = Rules("t", 1 - groups, np.array([30, 6]), ("a", "b"), languages, 8)
    chosen = select(x, 30, "greedy_swap", seed=0)
    noisy = x + np.random.default_rng(1).normal(scale=1e-6, size=x.shape).astype(np.float32)
    assert enforce(x, chosen, rules)[0].tolist() == enforce(noisy, chosen, rules)[0].tolist()


def _row(category: str, sub: str, language: str = "en", difficulty: str = "") -> DatasetRow:
    return DatasetRow(category=category, sub_category=sub, turns=[f"{sub} {language} {difficulty}"],
                      source="s", src_id=f"{sub}/{language}/{difficulty}", difficulty=difficulty, language=language)


def test_rules_for_hand_made_pools():
    rows = [_row("multilingual", f"{task}/x", language=lang)
            for task in ("math", "qa", "translation") for lang in ("de", "fr", "ja", "ko")]
    rules = rules_for("multilingual", rows, 10)
    assert rules.caps.tolist() == [4, 4, 4] and rules.group_names == ("math", "qa", "translation")
    assert rules.min_languages == 4          # the pool has only four languages
    two_tasks = rows[:8]                     # math and qa only: 2 x 4 < 10, the cap cannot hold
    assert rules_for("multilingual", two_tasks, 10).caps.tolist() == [10, 10]
    coding = [_row("coding", "c", difficulty=d) for d in ["hard"] * 10 + ["easy"] * 20]
    assert rules_for("coding", coding, 10).caps.tolist() == [10, 2]       # 8 hard of 10
    assert rules_for("coding", coding[8:], 10).caps.tolist() == [10, 8]   # only 2 hard in the pool
    assert rules_for("writing", rows, 10) is None


def test_multilingual_rules_on_the_mirror(sources_dir):
    pool = collect_candidates(SourceFiles(sources_dir))["multilingual"]
    rules = rules_for("multilingual", pool, 80)
    assert set(rules.group_names) >= {"math", "qa", "summarization", "translation"}
    assert (rules.caps == 32).all() and rules.min_languages == 23


def _meets_all(rules: Rules, chosen) -> bool:
    chosen = np.asarray(chosen)
    return _meets(rules, chosen) and int(rules.multiturn[chosen].sum()) >= rules.min_multiturn


def test_multiturn_minimum_repaired_then_no_allowed_swap_improves():
    x, clustered, _ = _pool(60, 8, seed=13)
    multi = clustered == 1                  # the multi-turn rows are the clustered half: the selector avoids them
    rows = [DatasetRow(category="qa", sub_category="q", turns=["a", "b"] if m else ["a"], source="s", src_id=str(i))
            for i, m in enumerate(multi)]
    rules = rules_for("qa", rows, 10)
    assert rules.min_multiturn == 2 and rules.caps.tolist() == [10]     # 20% of 10, no other rule
    chosen = select(x, 10, "greedy_swap", seed=0)
    assert multi[chosen].sum() < 2 and violations(rules, chosen)
    fixed, swaps = enforce(x, chosen, rules)
    assert swaps > 0 and violations(rules, fixed) == [] and multi[fixed].sum() >= 2
    best = _f(x, fixed)
    outside = sorted(set(range(len(x))) - set(fixed.tolist()))
    for out, new in itertools.product(fixed.tolist(), outside):
        trial = sorted(set(fixed.tolist()) - {out} | {new})
        if _meets_all(rules, trial):
            assert _f(x, trial) >= best - TIE_TOLERANCE, (out, new)


def test_multiturn_minimum_is_the_papers_share_of_each_category():
    rows = [DatasetRow(category="qa", sub_category="q", turns=["a"] * (1 + i % 2), source="s", src_id=str(i))
            for i in range(200)]
    assert rules_for("qa", rows, 80).min_multiturn == 16                  # 20% of 80 (the paper: about 20%)
    assert rules_for("qa", rows[:21], 80).min_multiturn == 10             # all the pool has


def test_multiturn_minimum_counts_only_what_the_hard_rule_leaves_room_for(monkeypatch):
    monkeypatch.setattr(composition, "MIN_MULTITURN_SHARE", 0.5)         # above the non-hard 20%, so the cap binds

    def row(difficulty: str, turns: int) -> DatasetRow:
        return DatasetRow(category="math", sub_category="m", turns=["t"] * turns, source="s",
                          src_id=f"{difficulty}{turns}", difficulty=difficulty)
    # 10 rows chosen: 8 hard; multi-turn rows: 1 hard, 5 medium, of which only 2 fit beside 8 hard rows
    pool = [row("hard", 1)] * 20 + [row("hard", 2)] + [row("medium", 2)] * 5 + [row("medium", 1)] * 5
    assert rules_for("math", pool, 10).min_multiturn == 3                 # 1 + min(5, 2), under 5
    assert rules_for("math", pool[:20] + pool[21:26], 10).min_multiturn == 2
    assert rules_for("math", [row("hard", 1)] * 20, 10).multiturn is None  # no multi-turn rows: no rule
