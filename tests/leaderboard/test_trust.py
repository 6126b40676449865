"""Trust made visible: self-reported until verified (tests/leaderboard/test_verify.py), plausibility warnings, a board that a bad stored
row cannot take down, and a fixed, bounded set of columns."""
from __future__ import annotations

import json
import sqlite3

from speedbench.leaderboard import board
from speedbench.leaderboard.__main__ import main
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.plausibility import typical_al_ceiling
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine, make_run
from speedbench.leaderboard.validate import submit_bundle

META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
        "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}


def test_every_entry_starts_self_reported(seeded_store):
    assert {e.trust for e in seeded_store.entries()} == {"self-reported"}
    assert {board.entry_row(e)["trust"] for e in seeded_store.entries()} == {"self-reported"}


def test_plausibility_warnings_are_stored_and_shown(seeded_store, known_builds, make_entry_runs, dataset_dir, tmp_path):
    # n-gram lookup that accepts like the best drafters, and greedy outputs that differ from the baseline
    engine = SimulatedEngine(rates=(0.95, 0.95, 0.95))
    sd, baselines = make_entry_runs(engine, seed=921)
    records = baselines[0] / "records.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    records.write_text("".join(json.dumps({**r, "output_text": f"different {i}"}) + "\n" for i, r in enumerate(rows)))
    entry = submit_bundle(pack_bundle(sd, {**META, "sd_method": "ngram"}, baselines), seeded_store, known_builds)
    codes = {w["code"] for w in entry.warnings}
    assert {"al.above_family", "greedy.outputs_differ"} <= codes
    al = entry.metrics["acceptance"]["acceptance_length"]
    assert al > typical_al_ceiling("ngram", 3) == 1 + 0.8 + 0.8**2 + 0.8**3
    stored = seeded_store.get(entry.id)
    assert stored.warnings == entry.warnings
    assert "al.above_family" in board.entry_row(stored)["warnings"]


def test_a_bad_stored_row_never_takes_the_board_down(seeded_db, capsys):
    with sqlite3.connect(seeded_db) as conn:  # a row no validator would write: a lone surrogate, broken JSON
        row = conn.execute("SELECT * FROM submissions LIMIT 1").fetchone()
        cols = [d[1] for d in conn.execute("PRAGMA table_info(submissions)")]
        bad = dict(zip(cols, row))
        bad.update(id="sb-bad000000001", bundle_sha256="b1", measurement_sha256="m1",
                   metadata_json='{"model": "\\ud800", "drafter": "x"}')
        conn.execute(f"INSERT INTO submissions ({', '.join(bad)}) VALUES ({', '.join('?' * len(bad))})",
                     list(bad.values()))
        bad.update(id="sb-bad000000002", bundle_sha256="b2", measurement_sha256="m2", metrics_json="{not json")
        conn.execute(f"INSERT INTO submissions ({', '.join(bad)}) VALUES ({', '.join('?' * len(bad))})",
                     list(bad.values()))
    store = LeaderboardStore(seeded_db)
    entries, problems = store.entries_and_problems()
    assert len(entries) == 3 and sorted(p[0] for p in problems) == ["'sb-bad000000001'", "'sb-bad000000002'"]
    rows = board.safe_rows(entries, problems)
    assert [r["trust"] for r in rows].count("error") == 2
    store.close()
    assert main(["list", "--db", str(seeded_db)]) == 0
    out = capsys.readouterr().out
    assert out.count("unreadable stored row") == 2 and out.count("self-reported") == 3
    assert main(["quarantine", "--db", str(seeded_db)]) == 0
    store = LeaderboardStore(seeded_db)
    assert store.entries_and_problems()[1] == [] and store.count() == 3
    with sqlite3.connect(seeded_db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0] == 2
    store.close()


def test_board_columns_are_bounded_whatever_an_entry_holds(seeded_store, known_builds, make_entry_runs, dataset_dir,
                                                           tmp_path):
    before = {k for row in board.safe_rows(seeded_store.entries()) for k in row}
    engine = SimulatedEngine(rates=(0.7, 0.6, 0.5))
    sd, _ = make_entry_runs(engine, seed=931, throughput=False)
    many = tuple(range(1, 17))  # the most load points a run may have
    tp = make_run(tmp_path / "tp", dataset_dir, "throughput_1k", engine, concurrencies=many, seed=932)
    ar = make_run(tmp_path / "ar", dataset_dir, "throughput_1k", SimulatedEngine(speculative=False, step_time_s=0.014),
                  concurrencies=many, seed=933)
    entry = submit_bundle(pack_bundle([*sd, tp], META, [ar]), seeded_store, known_builds)
    assert len(entry.metrics["speedup"]) == 16
    after = {k for row in board.safe_rows(seeded_store.entries()) for k in row}
    assert after == before  # 16 concurrencies add no column


def test_list_survives_rows_of_an_unexpected_shape(seeded_db, capsys):
    with sqlite3.connect(seeded_db) as conn:  # valid JSON objects, but not what an entry holds
        conn.execute("UPDATE submissions SET metrics_json = '{\"acceptance\": [1, 2]}', "
                     "metadata_json = '{\"model\": {\"nested\": 1}}' WHERE rowid = 1")
    assert main(["list", "--db", str(seeded_db)]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 3
    store = LeaderboardStore(seeded_db)
    rows = board.safe_rows(*store.entries_and_problems())
    assert len(rows) == 3 and sum(r["trust"] == "error" for r in rows) == 1
    store.close()


def test_speedup_above_the_al_is_a_warning():
    from speedbench.leaderboard.plausibility import metric_warnings
    from speedbench.leaderboard.schema import parse_metadata

    metrics = {"acceptance": {"acceptance_length": 2.0},
               "points": [{"dataset_config": "throughput_1k", "point": "c1", "role": "sd", "acceptance_length": 2.0}],
               "speedup": [{"dataset_config": "throughput_1k", "point": "c1", "isl": "1k", "concurrency": 1,
                            "speedup_measured": 2.3}]}
    codes = [w["code"] for w in metric_warnings(parse_metadata(META), metrics)]
    assert codes == ["speedup.above_al"]
    metrics["speedup"][0]["speedup_measured"] = 2.19  # within 10% of the AL
    assert metric_warnings(parse_metadata(META), metrics) == []
