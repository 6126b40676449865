"""Duplicates and claims (issue 24): a re-labelled or padded copy of a measurement is still a
duplicate, the same run twice in one bundle is refused, the claimed engine must be the one the
records' statistics name, and a model or drafter name that only looks like a known id is refused."""
from __future__ import annotations

import json
import sys

import pytest

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

METADATA = sys.modules["speedbench_leaderboard_test_fixtures"].METADATA


@pytest.fixture
def stored(seeded_store, known_builds, valid_bundle):
    """The seeded store with ``valid_bundle`` accepted: (store, entry, the bundle's files)."""
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    return seeded_store, entry


def test_an_extra_warmup_record_is_still_the_same_measurement(stored, known_builds, valid_bundle, bundles):
    store, entry = stored
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    warm = {**rows[0], "record_key": f"{rows[0]['run_point']}/warmup/{rows[0]['question_id']}/0", "warmup": True}
    copy = bundles.repack(bundles.with_records(files, "qual", [warm, *rows]))
    error = bundles.assert_rejected(store, known_builds, copy, "duplicate.measurement")
    assert entry.id in str(error)


def test_a_relabelled_load_point_is_still_the_same_measurement(stored, known_builds, valid_bundle, bundles):
    store, entry = stored
    files = bundles.unpack(valid_bundle)
    for run in ("tp1k", "baseline-tp1k-ar"):
        rows = [{**r, "run_point": "c5", "requested_concurrency": 5,
                 "record_key": r["record_key"].replace("c4/", "c5/", 1)} if r["run_point"] == "c4" else r
                for r in bundles.records(files, run)]
        files = bundles.with_records(files, run, rows)
    error = bundles.assert_rejected(store, known_builds, bundles.repack(files), "duplicate.measurement")
    assert entry.id in str(error)


def test_the_same_run_twice_in_one_bundle_is_refused(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    qual = {n[len("runs/qual/"):]: data for n, data in files.items() if n.startswith("runs/qual/")}
    files.update({f"runs/qual-again/{name}": data for name, data in qual.items()})
    doc = json.loads(files["submission.json"])
    doc["runs"].append({"path": "runs/qual-again", "role": "sd"})
    files["submission.json"] = json.dumps(doc).encode()
    bundles.assert_rejected(seeded_store, known_builds, bundles.repack(files), "bundle.same_run_twice", None,
                            "runs/qual", "runs/qual-again")


def test_a_vllm_run_claimed_as_sglang_is_refused(seeded_store, known_builds, stats_bundle, bundles):
    files = bundles.unpack(stats_bundle)
    for name in [n for n in files if n.endswith("manifest.json")]:
        manifest = json.loads(files[name])
        files[name] = json.dumps({**manifest, "engine": "sglang"}).encode()
    data = bundles.repack(bundles.edit_submission(files, engine="sglang"))
    bundles.assert_rejected(seeded_store, known_builds, data, "claim.engine_source", "engine_stats.source",
                            "vllm.metrics", "sglang")


def test_each_engine_s_own_statistics_are_accepted(seeded_store, known_builds, make_entry_runs):
    engine = SimulatedEngine(engine="sglang", engine_version="0.5.4", rates=(0.8, 0.6, 0.4), report_engine_stats=True)
    sd, baselines = make_entry_runs(engine, seed=61)
    records = (sd[0] / "records.jsonl").read_text()
    assert '"source": "sglang.meta_info"' in records
    entry = submit_bundle(pack_bundle(sd, {**METADATA, "engine": "sglang", "drafter": "sglang drafter"}, baselines),
                          seeded_store, known_builds)
    assert entry.metadata["engine"] == "sglang"


CYRILLIC_LLAMA = "meta-llama/Llama-3.3-70B-Instruct".replace("a", "\u0430")  # CYRILLIC SMALL LETTER A


@pytest.mark.parametrize("field,value,rule,shown_text", [
    ("model", CYRILLIC_LLAMA, "name.confusable", "meta-llama/Llama-3.3-70B-Instruct"),
    ("drafter", "EAGLE3-LLaMA3.3-Instruct-70B".replace("E", "\u0395"), "name.confusable",
     "EAGLE3-LLaMA3.3-Instruct-70B"),
    # Cyrillic palochka for "l": not listed as a look-alike of "l", but Latin and Cyrillic in one id
    ("model", "meta-llama/L1ama-3.3-70B-Instruct".replace("1", "\u04cf"), "name.mixed_script", "U+04CF"),
])
def test_a_name_that_only_looks_like_a_known_id_is_refused(stored, known_builds, make_entry_runs, bundles, field,
                                                            value, rule, shown_text):
    store, _ = stored
    sd, baselines = make_entry_runs(SimulatedEngine(rates=(0.6, 0.5, 0.4)), seed=62)
    data = pack_bundle(sd, {**METADATA, field: value}, baselines)
    error = bundles.assert_rejected(store, known_builds, data, rule, f"metadata.{field}")
    assert shown_text in str(error)


def test_fullwidth_letters_are_normalised_not_refused(seeded_store, known_builds, make_entry_runs):
    sd, _ = make_entry_runs(SimulatedEngine(rates=(0.6, 0.5, 0.4)), seed=63, throughput=False)
    wide = "\uff2d\uff59\uff2d\uff4f\uff44\uff45\uff4c/x-7B"  # "MyModel" in fullwidth forms
    entry = submit_bundle(pack_bundle(sd, {**METADATA, "model": wide}), seeded_store, known_builds)
    assert entry.metadata["model"] == "MyModel/x-7B"
