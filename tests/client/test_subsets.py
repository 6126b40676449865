"""Balanced subsets: --categories, --per-category and a round-robin --limit (client/data/selection.py).

The rows are written in category order, as a built config is; the expected subsets are counted by hand,
and the seeded order within a category is recomputed here from its definition (sha256 of "0\\x1f<id>").
"""
from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from speedbench.client.data.selection import SelectionError
from speedbench.client.data.workload import load_conversations
from speedbench.schema import DatasetRow
from tests.standins.fixtures import write_dataset

SIZES = {"coding": 80, "humanities": 80, "math": 5}  # sorted by category, like a built parquet


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    rows = [DatasetRow(category=c, sub_category="", turns=[f"{c} prompt {i}"], source="t", src_id=f"{c}-{i}")
            for c, n in SIZES.items() for i in range(n)]
    return write_dataset(tmp_path_factory.mktemp("subsets") / "ds", rows, config="qualitative")


def test_limit_takes_rows_round_robin_across_categories(dataset):
    rows = load_conversations(dataset, "qualitative", limit=88)
    # 88 rows over 3 categories, one from each in turn: math runs out after 5 rounds (15 rows),
    # then coding and humanities alternate: 5 + 5 + 5 + 2 * 36.5 -> 42, 41, 5 (coding first by name)
    assert Counter(r.category for r in rows) == {"coding": 42, "humanities": 41, "math": 5}
    assert [r.category for r in rows[:6]] == ["coding", "humanities", "math"] * 2
    before = load_conversations(dataset, "qualitative")[:88]  # what the first-N limit took
    assert Counter(r.category for r in before) == {"coding": 80, "humanities": 8}


def test_seeded_order_within_a_category(dataset):
    coding = [r for r in load_conversations(dataset, "qualitative", categories=["coding"], per_category=4)]
    everything = [r for r in load_conversations(dataset, "qualitative") if r.category == "coding"]
    by_hand = sorted(everything, key=lambda r: hashlib.sha256(f"0\x1f{r.question_id}".encode()).hexdigest())[:4]
    assert [r.question_id for r in coding] == [r.question_id for r in by_hand]
    assert load_conversations(dataset, "qualitative", limit=7) == load_conversations(dataset, "qualitative", limit=7)


def test_categories_and_per_category(dataset):
    rows = load_conversations(dataset, "qualitative", categories=["math", "humanities"], per_category=3)
    assert Counter(r.category for r in rows) == {"humanities": 3, "math": 3}
    # round-robin in name order, whatever order --categories names them in
    assert [r.category for r in rows] == ["humanities", "math"] * 3
    assert len(load_conversations(dataset, "qualitative", per_category=10)) == 10 + 10 + 5


def test_bad_subset_options_name_the_option(dataset):
    with pytest.raises(SelectionError, match=r"--categories: 'cooking' not in config 'qualitative' "
                                             r"\(its categories: coding, humanities, math\)"):
        load_conversations(dataset, "qualitative", categories=["coding", "cooking"])
    with pytest.raises(SelectionError, match="--per-category 0: expected a positive integer"):
        load_conversations(dataset, "qualitative", per_category=0)
