"""The SQLite store, rebuilding from raw bundles, the Hub mirror, and metrics recomputed from records.

Expected figures are computed here independently from the raw records (plain Python over
``chunk_tokens`` / ``chunk_ns``), or from the simulated acceptance rates.
"""
from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from speedbench.leaderboard import board
from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
from speedbench.leaderboard.mirror import HubMirror
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine, make_run
from speedbench.leaderboard.validate import STORED_LIMITS, read_runs, recompute_from_archive, submit_bundle


def test_store_is_sqlite_in_wal_mode_at_the_env_path(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_DB", str(tmp_path / "sub" / "env.sqlite3"))
    store = LeaderboardStore()
    assert store.path == tmp_path / "sub" / "env.sqlite3"
    assert store.journal_mode() == "wal"
    store.close()
    with sqlite3.connect(tmp_path / "sub" / "env.sqlite3") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"submissions", "bundles"} <= tables


def test_entries_and_raw_bundles_survive_reopening(seeded_db, seed_bundles):
    store = LeaderboardStore(seeded_db)
    entries = store.entries()
    assert [e.metadata["sd_method"] for e in entries] == ["eagle3", "mtp", "ngram"]
    assert [store.archive(e.id) for e in entries] == seed_bundles
    store.close()


def test_rebuild_recomputes_every_entry_from_its_raw_bundle(seeded_db, known_builds):
    store = LeaderboardStore(seeded_db)
    original = {e.id: e.metrics for e in store.entries()}
    with sqlite3.connect(seeded_db) as conn:  # corrupt the stored figures behind the store's back
        conn.execute("UPDATE submissions SET metrics_json = '{}'")
    assert all(e.metrics == {} for e in store.entries())
    changed = store.rebuild(lambda archive: recompute_from_archive(archive, known_builds))
    assert changed == 3
    assert {e.id: e.metrics for e in store.entries()} == original
    assert store.rebuild(lambda archive: recompute_from_archive(archive, known_builds)) == 0
    store.close()


def test_rebuild_command(seeded_db, known_builds_dir, monkeypatch, capsys):
    from speedbench.leaderboard.__main__ import main
    from speedbench.leaderboard.canonical import DIGEST_VERSION

    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    with sqlite3.connect(seeded_db) as conn:
        conn.execute("UPDATE submissions SET metrics_json = '{}' WHERE metadata_json LIKE '%ngram%'")
    assert main(["rebuild", "--db", str(seeded_db)]) == 0
    assert "3 entries, 1 recomputed" in capsys.readouterr().out
    assert main(["list", "--db", str(seeded_db)]) == 0
    assert capsys.readouterr().out.count("AL ") == 3


def _independent_al(records) -> tuple[float, dict[str, float]]:
    """Step-weighted AL from raw chunks: drop a lone first (prefill) token and the last chunk."""
    tokens, steps = defaultdict(int), defaultdict(int)
    for r in records:
        chunks = list(r["chunk_tokens"])
        if chunks and chunks[0] == 1:
            chunks = chunks[1:]
        chunks = chunks[:-1]
        tokens[r["category"]] += sum(chunks)
        steps[r["category"]] += len(chunks)
    per_cat = {c: tokens[c] / steps[c] for c in tokens}
    return sum(tokens.values()) / sum(steps.values()), per_cat


def _records(bundle: bytes, run_suffix: str) -> list[dict]:
    from speedbench.leaderboard.archive import read_archive

    files = read_archive(bundle)
    name = next(n for n in files if n.endswith(f"{run_suffix}/records.jsonl"))
    return [json.loads(line) for line in bytes(files[name]).splitlines() if line.strip()]


def test_recomputed_acceptance_matches_the_raw_records(seeded_store, seed_bundles):
    entry = seeded_store.entries()[0]
    records = _records(seed_bundles[0], "/qual")
    overall, per_cat = _independent_al(records)
    acceptance = entry.metrics["acceptance"]
    assert acceptance["acceptance_source"] == "chunks"
    assert acceptance["acceptance_length"] == pytest.approx(overall, rel=1e-12)
    assert set(acceptance["per_category"]) == set(per_cat)
    for category, value in per_cat.items():
        assert acceptance["per_category"][category]["acceptance_length"] == pytest.approx(value, rel=1e-12)
    low, high = acceptance["acceptance_length_ci"]
    assert low < overall < high
    # and close to what the simulated drafter was set up to accept: 1 + .8 + .8*.7 + .8*.7*.6
    assert overall == pytest.approx(1 + 0.8 + 0.56 + 0.336, abs=0.15)
    assert per_cat["coding"] > per_cat["writing"]  # category scales 1.15 vs 0.8


def test_engine_statistics_are_used_when_every_record_has_them(tmp_path, dataset_dir, known_builds):
    engine = SimulatedEngine(engine="vllm", rates=(0.8, 0.6, 0.4), report_engine_stats=True)
    run = make_run(tmp_path / "qual", dataset_dir, "qualitative", engine, seed=5)
    bundle = pack_bundle([run], {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
                                 "engine_version": "1", "gpu": "g", "draft_length": 3, "temperature": 0})
    store = LeaderboardStore(tmp_path / "s.sqlite3")
    acceptance = submit_bundle(bundle, store, known_builds).metrics["acceptance"]
    store.close()
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    # engine view: every step after the prefill token, the cut last step included: 1 + accepted / steps
    steps = sum(r["engine_stats"]["verify_steps"] for r in records)
    accepted = sum(r["engine_stats"]["accepted_tokens"] for r in records)
    assert acceptance["acceptance_source"] == "engine"
    assert acceptance["acceptance_length"] == pytest.approx(1 + accepted / steps, rel=1e-12)
    # and without the statistics the chunks give a (slightly different, last step dropped) figure
    assert acceptance["acceptance_length"] != pytest.approx(_independent_al(records)[0], rel=1e-9)


def test_recomputed_speedup_matches_the_raw_records(seeded_store, seed_bundles):
    entry = seeded_store.entries()[0]
    sd, ar = _records(seed_bundles[0], "/tp1k"), _records(seed_bundles[0], "/baseline-tp1k-ar")

    def output_tps(records, concurrency):
        rs = [r for r in records if r["requested_concurrency"] == concurrency]
        span = max(r["chunk_ns"][-1] for r in rs) - min(r["scheduled_ns"] for r in rs)
        return sum(sum(r["chunk_tokens"]) for r in rs) / (span / 1e9)

    speedups = {s["concurrency"]: s for s in entry.metrics["speedup"]}
    assert set(speedups) == {1, 4}
    for c in (1, 4):
        expected = output_tps(sd, c) / output_tps(ar, c)
        assert speedups[c]["speedup_measured"] == pytest.approx(expected, rel=1e-9)
        assert speedups[c]["isl"] == "1k"
    row = board.entry_row(entry)
    assert row["speedup_1k"] == round(max(s["speedup_measured"] for s in speedups.values()), 3)
    # the Appendix-G estimate uses mean step times: baseline steps are 0.7x as long as SD steps here
    # (each step jitters by up to 2%, seeded: the means agree to well within 1%)
    assert speedups[1]["speedup_estimate"] == pytest.approx(0.7 * next(
        p["acceptance_length"] for p in entry.metrics["points"] if p["run"].endswith("/tp1k") and p["concurrency"] == 1),
        rel=1e-2)


def test_submitted_summary_numbers_are_never_used(seeded_store, known_builds, make_entry_runs):
    engine = SimulatedEngine(engine="vllm", rates=(0.6, 0.5, 0.4))
    sd, baselines = make_entry_runs(engine, seed=321, throughput=False)
    honest = pack_bundle(sd, {"model": "m/a", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
                              "engine_version": "1", "gpu": "g", "draft_length": 3, "temperature": 0})
    (sd[0] / "results.json").write_text(json.dumps({"acceptance_length": 9.99, "speedup": 50}))
    inflated = pack_bundle(sd, {"model": "m/b", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
                                "engine_version": "1", "gpu": "g", "draft_length": 3, "temperature": 0})
    store = LeaderboardStore(seeded_store.path.with_name("other.sqlite3"))
    a = submit_bundle(honest, store, known_builds)
    b = submit_bundle(inflated, seeded_store, known_builds)
    assert a.metrics["acceptance"] == b.metrics["acceptance"]
    assert a.metrics["acceptance"]["acceptance_length"] < 3
    store.close()


def test_mirror_is_off_by_default(monkeypatch):
    monkeypatch.delenv("SPEEDBENCH_HUB_MIRROR", raising=False)
    assert HubMirror.from_env() is None


def test_known_builds_load_from_env_folder(monkeypatch, known_builds_dir, known_builds):
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    loaded = KnownBuilds.load()
    packaged = KnownBuilds.load(paths=[])  # the descriptors shipped in the package
    assert set(loaded.by_hash) == set(known_builds.by_hash) | set(packaged.by_hash)
    assert set(known_builds.by_hash) - set(packaged.by_hash)


def test_describe_dataset_reads_the_parquet_rows(dataset_dir):
    from speedbench.client.data.workload import dataset_fingerprint

    build = describe_dataset(dataset_dir)
    assert sorted(build.configs) == ["qualitative", "throughput_1k"]
    assert len(build.configs["qualitative"].questions) == 11 * 5
    assert set(build.configs["throughput_1k"].questions.values()) == {"low_entropy", "mixed", "high_entropy"}
    # the hash a run records is the client's fingerprint of that config
    for name, config in build.configs.items():
        assert config.dataset_config_sha256 == dataset_fingerprint(dataset_dir, name)
    assert build.configs["qualitative"].dataset_config_sha256 != build.configs["throughput_1k"].dataset_config_sha256


def test_stored_bundle_reads_back_into_runs(seeded_store):
    entry = seeded_store.entries()[0]
    metadata, runs, _ = read_runs(seeded_store.archive(entry.id), STORED_LIMITS)
    assert metadata.model == entry.metadata["model"]
    assert {r.role for r in runs} == {"sd", "baseline"}
    assert {r.isl_bucket for r in runs} == {None, "1k"}


def test_a_version_1_store_is_migrated_and_its_entries_get_measurement_digests(seeded_db, seed_bundles,
                                                                              known_builds_dir, monkeypatch, capsys):
    from speedbench.leaderboard.__main__ import main
    from speedbench.leaderboard.canonical import DIGEST_VERSION
    from speedbench.leaderboard.known_builds import KnownBuilds
    from speedbench.leaderboard.schema import BundleRejected

    v1 = seeded_db.with_name("v1.sqlite3")  # a store written before version 2: the old tables only
    with sqlite3.connect(v1) as old, sqlite3.connect(seeded_db) as new:
        old.executescript("""
            CREATE TABLE submissions (id TEXT PRIMARY KEY, bundle_sha256 TEXT NOT NULL UNIQUE,
                archive_sha256 TEXT NOT NULL, submitted_at TEXT NOT NULL, schema_version INTEGER NOT NULL,
                metadata_json TEXT NOT NULL, metrics_json TEXT NOT NULL, metrics_version TEXT NOT NULL);
            CREATE TABLE bundles (submission_id TEXT PRIMARY KEY REFERENCES submissions(id) ON DELETE CASCADE,
                archive BLOB NOT NULL);
            CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO store_info VALUES ('store_version', '1');""")
        old.executemany("INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", new.execute(
            "SELECT id, bundle_sha256, archive_sha256, submitted_at, schema_version, metadata_json, metrics_json, "
            "metrics_version FROM submissions").fetchall())
        old.executemany("INSERT INTO bundles VALUES (?, ?)", new.execute("SELECT * FROM bundles").fetchall())
    seeded_db = v1
    store = LeaderboardStore(seeded_db)
    assert {e.trust for e in store.entries()} == {"self-reported"} and store.count() == 3
    assert len(store.missing_digests(DIGEST_VERSION)) == 3
    store.close()
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    assert main(["rebuild", "--db", str(seeded_db)]) == 0
    store = LeaderboardStore(seeded_db)
    assert store.missing_digests(DIGEST_VERSION) == []
    try:
        submit_bundle(seed_bundles[0], store, KnownBuilds.load())
        raise AssertionError("a resubmission of an old entry was accepted")
    except BundleRejected as exc:
        assert exc.rule == "duplicate.measurement"
    store.close()
