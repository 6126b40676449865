"""The shipped known-build descriptor's qualitative config is a default build of today's pools.

Rebuilding it here would embed ~45,000 texts, so this checks what a default build must satisfy
instead: every question is a current candidate of its category (none from Spec-Bench), 80 per
category, and the composition rules hold (Multilingual: no task over 32 of 80, at least 23
languages; Coding, Humanities, Math, STEM: at least 64 of 80 hard; at least 16 of 80 multi-turn
where the category's pool has multi-turn rows and its hard rule leaves room), with a multi-turn
share of at least 0.18 over the 880 rows (the paper: about 20%).
"""
from __future__ import annotations

from collections import Counter

from speedbench.dataset_builder.qualitative.pools import collect_candidates
from speedbench.dataset_builder.sources import SourceFiles
from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.schema import CATEGORIES_WITH_DIFFICULTY, QUALITATIVE_CATEGORIES

PACKAGED = "speed-bench 0.1.0 (offline source mirror, seed 0, default options)"


def test_packaged_qualitative_is_a_default_build_of_the_current_pools(sources_dir):
    build = next(b for b in KnownBuilds.load(paths=[]).builds if b.name == PACKAGED)
    questions = build.configs["qualitative"].questions
    pools = collect_candidates(SourceFiles(sources_dir))
    by_id = {r.question_id: r for rows in pools.values() for r in rows}
    rows = [by_id[q] for q in questions]                      # KeyError: not a current candidate
    assert all(r.category == questions[r.question_id] for r in rows)
    assert Counter(r.category for r in rows) == {c: 80 for c in QUALITATIVE_CATEGORIES}
    assert all(r.source != "hemingkx/Spec-Bench" for r in rows)
    multilingual = [r for r in rows if r.category == "multilingual"]
    assert max(Counter(r.sub_category.split("/")[0] for r in multilingual).values()) <= 32
    assert len({r.language for r in multilingual}) >= 23
    for category in CATEGORIES_WITH_DIFFICULTY:
        assert sum(r.difficulty == "hard" for r in rows if r.category == category) >= 64, category
    assert len(rows) == 880 and sum(r.multiturn for r in rows) / len(rows) >= 0.18
    for category in QUALITATIVE_CATEGORIES:
        pool = pools[category]
        multi = sum(r.multiturn for r in rows if r.category == category)
        room = sum(r.multiturn for r in pool)
        if category in CATEGORIES_WITH_DIFFICULTY:   # non-hard multi-turn rows count up to the 16 non-hard places
            room = sum(r.multiturn and r.difficulty == "hard" for r in pool) + min(
                16, sum(r.multiturn and r.difficulty != "hard" for r in pool))
        assert multi >= min(16, room), category
