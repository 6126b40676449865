"""Board rows, filters, sorting, Pareto points and comparisons, without a browser."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from speedbench.leaderboard import board
from speedbench.schema import QUALITATIVE_CATEGORIES

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"


@pytest.fixture
def space_modules():
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import compare, populate

    return populate, compare


@pytest.fixture
def rows(seeded_store):
    return [board.entry_row(e) for e in seeded_store.entries()]


def test_entry_row_has_identity_acceptance_and_speedup(rows, seeded_store):
    eagle = rows[0]
    entry = seeded_store.entries()[0]
    assert (eagle["model"], eagle["drafter"], eagle["sd_method"], eagle["engine"], eagle["gpu"],
            eagle["draft_length"], eagle["temperature"], eagle["model_family"]) == (
        "meta-llama/Llama-3.3-70B-Instruct", "EAGLE3-LLaMA3.3-Instruct-70B", "eagle3", "vllm", "B200", 3, 0.0, "llama")
    assert eagle["al"] == round(entry.metrics["acceptance"]["acceptance_length"], 3)
    assert eagle["al_ci_low"] < eagle["al"] < eagle["al_ci_high"]
    assert all(f"al_{c}" in eagle for c in QUALITATIVE_CATEGORIES)
    # one best-speedup column per ISL bucket, never one per concurrency
    assert board.speedup_columns(rows) == ["speedup_1k"]
    speedups = {s["concurrency"]: s["speedup_measured"] for s in entry.metrics["speedup"]}
    best = max(speedups, key=speedups.get)
    assert (eagle["speedup_1k"], eagle["speedup_1k_at"]) == (round(speedups[best], 3), best)
    assert eagle["isls"] == ["1k"] and rows[1]["isls"] == []  # the MTP entry has no throughput run
    assert eagle["submitted"] == "2026-11-01"


def test_category_columns_follow_the_published_order(rows):
    assert board.category_columns(rows) == [f"al_{c}" for c in QUALITATIVE_CATEGORIES]


@pytest.mark.parametrize("filters,expected", [
    ({}, {"eagle3", "mtp", "ngram"}),
    ({"engines": ["sglang"]}, {"mtp"}),
    ({"engines": ["vllm", "trtllm"]}, {"eagle3", "ngram"}),
    ({"methods": ["ngram"]}, {"ngram"}),
    ({"families": ["qwen"]}, {"mtp"}),
    ({"families": ["llama"], "methods": ["eagle3", "mtp"]}, {"eagle3"}),
    ({"isl": "1k"}, {"eagle3", "ngram"}),
    ({"isl": "8k"}, set()),
    ({"search": "qwen3 h100"}, {"mtp"}),
    ({"search": "PROMPT lookup"}, {"ngram"}),
    ({"search": "llama b200"}, {"eagle3", "ngram"}),
])
def test_filters(rows, filters, expected):
    assert {r["sd_method"] for r in board.filter_rows(rows, **filters)} == expected


def test_sorting_puts_missing_values_last(rows):
    by_al = [r["sd_method"] for r in board.sort_rows(rows, "al")]
    assert by_al == ["eagle3", "mtp", "ngram"]  # simulated ALs ~2.70, ~2.62, ~1.70
    assert [r["sd_method"] for r in board.sort_rows(rows, "al", descending=False)] == by_al[::-1]
    by_speedup = [r["sd_method"] for r in board.sort_rows(rows, "speedup_1k", descending=False)]
    assert by_speedup[-1] == "mtp"  # no speedup: last in either direction
    assert [r["sd_method"] for r in board.sort_rows(rows, "speedup_1k")][-1] == "mtp"


def test_board_frame_headers_types_and_filtering(seeded_store, space_modules):
    populate, _ = space_modules
    all_rows = populate.all_rows(seeded_store)
    frame, datatypes, widths = populate.board_frame(all_rows)
    assert list(frame.columns[:10]) == ["Model", "Drafter", "Method", "Engine", "Version", "GPU", "K",
                                        "Temp.", "Mean AL", "AL (req.)"]
    assert len(widths) == len(frame.columns)
    assert {"Speedup 1k (best)", "at concurrency (1k)", "Trust", "Warnings", "coding"} <= set(frame.columns)
    assert list(frame["Client-lagged % (max)"]) == [0.0, 0.0, 0.0]  # issue 20: the board shows the share
    assert set(frame["Trust"]) == {"self-reported"}
    assert len(datatypes) == len(frame.columns)
    assert datatypes[frame.columns.get_loc("Model")] == "str"  # text is never rendered as HTML/Markdown
    assert "html" not in datatypes and "markdown" not in datatypes
    assert list(frame["Method"]) == ["eagle3", "mtp", "ngram"]
    narrowed, _, _ = populate.board_frame(all_rows, engines=["trtllm"], sort_by="Model", descending=False)
    assert list(narrowed["Method"]) == ["ngram"]
    with_ci, _, _ = populate.board_frame(all_rows, show_ci=True)
    assert {"AL CI low", "AL CI high", "coding CI low"} <= set(with_ci.columns)
    choices = populate.filter_choices(all_rows)
    assert choices["engines"] == ["sglang", "trtllm", "vllm"] and choices["isls"] == ["any", "1k"]


def test_pareto_points_and_frontier(seeded_store):
    entries = seeded_store.entries()
    points = board.pareto_points(entries, "1k")
    by_entry = {}
    for p in points:
        by_entry.setdefault(p["entry"], []).append(p)
    assert set(by_entry) == {f"{entries[0].id} (1k)", f"{entries[2].id} (1k)"}
    for series in by_entry.values():
        assert [p["concurrency"] for p in series] == [1, 4]
        # more concurrency: more output TPS, less per-user TPS; both points are on the frontier
        assert series[1]["output_tps"] > series[0]["output_tps"]
        assert series[1]["user_tps"] < series[0]["user_tps"]
        assert all(p["on_frontier"] for p in series)
    assert board.pareto_points(entries, "8k") == []


def test_paired_differences_against_the_reference(seeded_store):
    entries = seeded_store.entries()
    diffs = board.paired_differences(seeded_store, [entries[0], entries[2]])
    overall = next(d for d in diffs if d["category"] == "all")
    rows = {e.id: board.entry_row(e) for e in entries}
    assert overall["al_reference"] == rows[entries[0].id]["al"]
    assert overall["al_entry"] == rows[entries[2].id]["al"]
    assert overall["difference"] == pytest.approx(overall["al_entry"] - overall["al_reference"], abs=2e-3)
    assert overall["ci_low"] < overall["difference"] < overall["ci_high"] < 0  # n-gram accepts far less
    assert overall["paired_prompts"] == 55  # every qualitative prompt of the synthetic build
    assert {d["category"] for d in diffs} == {"all", *QUALITATIVE_CATEGORIES}


def test_compare_needs_two_entries(seeded_store, space_modules):
    _, compare = space_modules
    side, diffs, pareto, note = compare.compare(seeded_store, [seeded_store.entries()[0].id], "any")
    assert side.empty and diffs.empty and pareto.empty and "two or more" in note
    ids = [e.id for e in seeded_store.entries()]
    side, diffs, pareto, note = compare.compare(seeded_store, ids, "any")
    assert list(side["category"])[:2] == ["all", "coding"]
    assert set(ids) <= set(side.columns)
    assert len(pareto) == 4  # two entries with a 1k sweep at concurrency 1 and 4


def test_submission_message_is_plain_text(space_modules):
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace.submission import SubmissionResult

    # shown in a Textbox as plain text: the message is neither escaped nor rendered
    text = SubmissionResult(False, None, "member '![x](http://127.0.0.1:9/x.png)' bad").text()
    assert text == "Rejected: member '![x](http://127.0.0.1:9/x.png)' bad"


def test_the_about_tab_documents_the_client_lag_share(space_modules):
    from sbspace import about

    from speedbench.metrics.client_timing import MAX_CLIENT_LAGGED_SHARE

    assert MAX_CLIENT_LAGGED_SHARE == 0.25
    assert "**Client-lagged % (max)**" in about.ABOUT and "more than 25% at any load point" in about.ABOUT
    assert "`client.lag`" in about.ABOUT and "%MAX_LAGGED%" not in about.ABOUT
