"""Losslessness of a submitted bundle: SD outputs against the baseline's, token by token, flagged
(never rejected), stored with the entry and shown on the board. Divergences are planted by hand."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from speedbench.leaderboard import board
from speedbench.leaderboard.lossless import WARNING_CODE, lossless_cell
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"
META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "lossless drafter", "sd_method": "eagle3",
        "engine": "vllm", "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}


def _ids(question_id: str, n: int) -> list[int]:
    """Deterministic 'greedy output' of a prompt: both runs produce it unless a divergence is planted."""
    seed = sum(map(ord, question_id))
    return [(seed * 31 + 7 * i) % 5000 for i in range(n)]


def _rewrite(run_dir: Path, edit) -> None:
    path = run_dir / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(edit(r)) + "\n" for r in rows))


def _with_ids(source="engine", plant=None):
    """A record edit: ids for every record; ``plant[(point, question_index)] = position`` flips one id."""
    order: dict[str, int] = {}

    def edit(row):
        ids = _ids(row["question_id"], row["output_tokens"])
        index = order.setdefault(row["question_id"], len(order))
        position = (plant or {}).get((row["run_point"], index))
        if position is not None:
            ids[position] = 99_999
        return {**row, "output_token_ids": ids, "output_token_ids_source": source}

    return edit


@pytest.fixture
def runs(make_entry_runs, tmp_path):
    """Fresh copies of (SD qualitative, SD throughput_1k, baseline throughput_1k) at c1 and c4."""
    sd, baselines = make_entry_runs(SimulatedEngine(rates=(0.8, 0.7, 0.6)), seed=1601)
    copies = []
    for run in [*sd, *baselines]:
        shutil.copytree(run, tmp_path / run.name)
        copies.append(tmp_path / run.name)
    return copies


@pytest.fixture
def store(tmp_path):
    store = LeaderboardStore(tmp_path / "board.sqlite3")
    yield store
    store.close()


def _submit(runs, store, known_builds, **meta):
    qual, tp, base = runs
    return submit_bundle(pack_bundle([qual, tp], {**META, **meta}, [base]), store, known_builds)


def test_planted_divergences_are_flagged_stored_and_shown(runs, store, known_builds):
    qual, tp, base = runs
    # throughput_1k has 3 categories x 5 rows = 15 prompts, run at c1 and c4 by both runs
    _rewrite(tp, _with_ids(plant={("c1", 3): 30, ("c4", 0): 7, ("c4", 9): 0}))
    _rewrite(base, _with_ids())
    entry = _submit(runs, store, known_builds)  # accepted: a flag, never a rejection

    summary = entry.metrics["losslessness"]
    assert summary["checked"] is True
    assert (summary["num_compared"], summary["num_identical"], summary["num_divergent"]) == (30, 27, 3)
    assert summary["share_identical"] == pytest.approx(27 / 30)
    pairs = {p["point"]: p for p in summary["pairs"]}
    assert set(pairs) == {"c1", "c4"}
    c1, c4 = pairs["c1"], pairs["c4"]
    assert (c1["num_compared"], c1["num_identical"], c1["earliest_divergence"]) == (15, 14, 30)
    assert (c4["num_compared"], c4["num_identical"], c4["earliest_divergence"], c4["median_divergence"]) == (
        15, 13, 0, 7)
    assert sorted(r["first_divergence"] for r in c4["divergent_requests"]) == [0, 7]
    assert all(r["sd_tokens"] == r["baseline_tokens"] == 64 for r in c4["divergent_requests"])
    assert c1["ids"] == "engine" and c1["skipped"] == {}
    assert "not bitwise deterministic" in summary["note"]

    flags = [w for w in entry.warnings if w["code"] == WARNING_CODE]
    assert len(flags) == 2  # one per divergent (SD run, baseline run, point)
    assert any("13 of 15 greedy outputs identical" in w["message"] and "token 0" in w["message"] for w in flags)
    assert all("not bitwise deterministic" in w["message"] for w in flags)

    stored = store.get(entry.id)
    assert stored.metrics["losslessness"] == summary and stored.warnings == entry.warnings
    row = board.entry_row(stored)
    assert row["lossless"] == "90.0% identical (3 of 30 differ)"
    assert WARNING_CODE in row["warnings"]


def test_the_space_shows_the_losslessness_column(runs, store, known_builds):
    _rewrite(runs[1], _with_ids(plant={("c4", 2): 5}))
    _rewrite(runs[2], _with_ids())
    _submit(runs, store, known_builds)
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import about, populate

    frame, datatypes, _ = populate.board_frame(populate.all_rows(store))
    assert frame["Lossless (T=0)"].tolist() == ["96.6% identical (1 of 30 differ)"]  # 29/30 = 96.67%, floored
    assert datatypes[frame.columns.get_loc("Lossless (T=0)")] == "str"
    assert "Lossless (T=0)" in about.ABOUT and "not bitwise deterministic" in about.ABOUT


def test_identical_outputs_raise_no_flag(runs, store, known_builds):
    _rewrite(runs[1], _with_ids())
    _rewrite(runs[2], _with_ids())
    entry = _submit(runs, store, known_builds)
    assert entry.metrics["losslessness"]["share_identical"] == 1.0
    assert WARNING_CODE not in {w["code"] for w in entry.warnings}
    assert board.entry_row(entry)["lossless"] == "100% identical (30)"


def test_reencoded_ids_are_named(runs, store, known_builds):
    _rewrite(runs[1], _with_ids(source="reencoded", plant={("c1", 0): 3}))
    _rewrite(runs[2], _with_ids())
    entry = _submit(runs, store, known_builds)
    c1 = next(p for p in entry.metrics["losslessness"]["pairs"] if p["point"] == "c1")
    assert c1["ids"] == "engine+reencoded"
    assert any("ids: engine+reencoded" in w["message"] for w in entry.warnings if w["code"] == WARNING_CODE)


def test_not_compared_above_temperature_zero_or_without_ids(runs, store, known_builds, tmp_path):
    _rewrite(runs[1], _with_ids(plant={("c1", 0): 3}))
    _rewrite(runs[2], _with_ids())
    sampled = _submit(runs, store, known_builds, temperature=0.7)
    assert sampled.metrics["losslessness"]["checked"] is False
    assert "temperature" in sampled.metrics["losslessness"]["reason"]
    assert board.entry_row(sampled)["lossless"] == ""
    assert WARNING_CODE not in {w["code"] for w in sampled.warnings}

    _rewrite(runs[2], lambda r: {**r, "output_token_ids": None, "output_token_ids_source": None})
    other = LeaderboardStore(tmp_path / "other.sqlite3")
    try:
        no_ids = _submit(runs, other, known_builds)
    finally:
        other.close()
    summary = no_ids.metrics["losslessness"]
    assert summary["checked"] is False and summary["num_compared"] == 0
    assert [p["skipped"] for p in summary["pairs"]] == [{"no_token_ids": 15}, {"no_token_ids": 15}]


def test_a_baseline_manifest_above_temperature_zero_is_not_paired(runs, store, known_builds):
    _rewrite(runs[1], _with_ids(plant={("c1", 0): 3}))
    _rewrite(runs[2], _with_ids())
    manifest = runs[2] / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["options"]["sampling"]["temperature"] = 0.8
    manifest.write_text(json.dumps(doc))
    summary = _submit(runs, store, known_builds).metrics["losslessness"]
    assert summary["pairs"] == [] and summary["checked"] is False


@pytest.mark.parametrize("ids, source", [("1 2 3", "engine"), ([1, -2], "engine"), ([1, 2.5], "engine"),
                                         ([1, True], "engine"), ([1, 2**32], "engine"), ([1, 2], 7)])
def test_malformed_token_ids_are_rejected_naming_the_field(runs, store, known_builds, bundles, ids, source):
    _rewrite(runs[2], lambda r: {**r, "output_token_ids": ids, "output_token_ids_source": source})
    qual, tp, base = runs
    field = "output_token_ids_source" if source == 7 else "output_token_ids"
    bundles.assert_rejected(store, known_builds, pack_bundle([qual, tp], META, [base]), "record.type", field,
                            "records.jsonl line 1")


@pytest.mark.parametrize("summary, cell", [
    (None, ""), ({"checked": False}, ""), ({"checked": True, "num_compared": 3, "num_divergent": 1},
                                            "66.6% identical (1 of 3 differ)"),
    ({"checked": True, "num_compared": 10_000, "num_divergent": 1}, "99.9% identical (1 of 10000 differ)"),
    ({"checked": True, "num_compared": "3", "num_divergent": 0}, ""),  # a stored row is never trusted
    ({"checked": True, "num_compared": 3, "num_divergent": 4}, ""),
])
def test_lossless_cell(summary, cell):
    assert lossless_cell(summary) == cell


def test_submit_dry_run_prints_the_flag(runs, known_builds_dir, monkeypatch, capsys):
    from speedbench.cli import main

    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    qual, tp, base = runs
    _rewrite(tp, _with_ids(plant={("c4", 1): 12}))
    _rewrite(base, _with_ids())
    code = main(["submit", str(qual), str(tp), "--baseline", str(base), "--dry-run", "--drafter", "d",
                 "--method", "eagle3", "--gpu", "H100"])
    out = capsys.readouterr().out
    assert code == 0
    assert "lossless (T=0): 96.6% identical (1 of 30 differ)" in out
    assert f"flag {WARNING_CODE}:" in out and "earliest divergence at token 12" in out


@pytest.mark.e2e
def test_real_client_runs_are_compared_token_by_token(tmp_path, models_dir):
    """Run folders from the real `speedbench run` against the vLLM stand-in (whose token ids depend only
    on the position, with or without speculation): identical, then one id changed in the SD run."""
    import dataclasses

    from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset
    from tests.standins.standin import Simulation, StandinServer
    from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset

    rows = [dataclasses.replace(r, turns=[r.turns[0] + ". " + " ".join(["The sun was hot and bright."] * 120)])
            for r in story_rows(6)]  # a 1k bucket's prompts are about 1,000 tokens long
    dataset = write_dataset(tmp_path / "speed-bench", rows, config="throughput_1k")
    runs = {}
    for name, rates in (("tp", [0.85, 0.6, 0.35]), ("tp-ar", [0.0])):
        with StandinServer("vllm", Simulation(conditional_rates=rates, step_s=0.001)) as server:
            assert run_cli("vllm", server.url, dataset, tmp_path / name, models_dir, "--max-tokens", "40",
                           "--ignore-eos", "--config", "throughput_1k", "--concurrency", "1,3") == 0
        runs[name] = tmp_path / name
    # a server without speculation reports no speculative-decoding metrics (as test_real_client_runs does)
    _rewrite(runs["tp-ar"], lambda r: {**r, "engine_stats": None})
    assert {r["output_token_ids_source"] for r in read_jsonl(runs["tp"] / "records.jsonl")} == {"engine"}
    builds = KnownBuilds([describe_dataset(dataset, name="client test build")])
    meta = {**META, "model": "standin/model", "engine_version": "0.0-standin", "gpu": "none"}

    def submit(db: str) -> dict:
        store = LeaderboardStore(tmp_path / db)
        try:
            return submit_bundle(pack_bundle([runs["tp"]], meta, [runs["tp-ar"]]), store, builds).metrics
        finally:
            store.close()

    same = submit("same.sqlite3")["losslessness"]
    assert (same["num_compared"], same["num_identical"]) == (12, 12)  # 6 prompts at c1 and c3
    assert {p["ids"] for p in same["pairs"]} == {"engine"}

    first = read_jsonl(runs["tp"] / "records.jsonl")
    target = next(r for r in first if not r["warmup"] and r["run_point"] == "c3")

    def plant(record):  # position 20 held (7 * 20 + 3) % 500 + 3 = 146
        if record["record_key"] != target["record_key"]:
            return record
        return {**record, "output_token_ids": record["output_token_ids"][:20] + [499] + record["output_token_ids"][21:]}

    _rewrite(runs["tp"], plant)
    flagged = submit("flagged.sqlite3")["losslessness"]
    c3 = next(p for p in flagged["pairs"] if p["point"] == "c3")
    assert (c3["num_compared"], c3["num_identical"], c3["earliest_divergence"]) == (6, 5, 20)
    assert c3["divergent_requests"][0]["request"] == f"{target['question_id']}/{target['turn_index']}"


def test_a_rebuild_adds_the_check_to_an_entry_stored_without_it(runs, store, known_builds):
    import sqlite3

    from speedbench.leaderboard.validate import recompute_from_archive

    _rewrite(runs[1], _with_ids(plant={("c1", 4): 9}))
    _rewrite(runs[2], _with_ids())
    entry = _submit(runs, store, known_builds)
    old = {k: v for k, v in entry.metrics.items() if k != "losslessness"}  # an entry from before the check
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE submissions SET metrics_json = ? WHERE id = ?", (json.dumps(old), entry.id))
    assert board.entry_row(store.get(entry.id))["lossless"] == ""
    assert store.rebuild(lambda archive: recompute_from_archive(archive, known_builds)) == 1
    rebuilt = store.get(entry.id)
    assert rebuilt.metrics["losslessness"]["num_divergent"] == 1
    assert board.entry_row(rebuilt)["lossless"] == "96.6% identical (1 of 30 differ)"
