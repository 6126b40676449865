"""Verification that means something (issue 24): only an independent rerun, made after the entry,
that reproduces every stored figure (speedups included) marks an entry verified, and the entry
then says who verified it with what."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from speedbench.leaderboard import board
from speedbench.leaderboard.__main__ import main
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "d", "sd_method": "eagle3", "engine": "vllm",
        "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}
ENGINE = SimulatedEngine(rates=(0.75, 0.6, 0.5))


@pytest.fixture
def submitted(seeded_db, known_builds_dir, known_builds, make_entry_runs, monkeypatch):
    """An entry (qualitative + 1k throughput with a baseline) in the seeded store: (its id, its run dirs)."""
    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    sd, baselines = make_entry_runs(ENGINE, seed=901)
    store = LeaderboardStore(seeded_db)
    entry = submit_bundle(pack_bundle(sd, META, baselines), store, known_builds)
    store.close()
    return entry.id, sd, baselines


def _verify(seeded_db, entry_id, sd, baselines=(), verifier="maintainer A") -> int:
    args = ["verify", entry_id, "--db", str(seeded_db), "--verifier", verifier]
    args += sum((["--run", str(p)] for p in sd), []) + sum((["--baseline", str(p)] for p in baselines), [])
    return main(args)


def _stored(seeded_db, entry_id):
    store = LeaderboardStore(seeded_db)
    try:
        return store.get(entry_id)
    finally:
        store.close()


def test_an_independent_rerun_verifies_and_says_who_and_with_what(submitted, seeded_db, make_entry_runs, capsys):
    entry_id, _, _ = submitted
    # a maintainer's rerun: same setup, another seed, made now (after the entry)
    fresh_sd, fresh_base = make_entry_runs(ENGINE, seed=902, started_unix_s=time.time() + 1)
    code = _verify(seeded_db, entry_id, fresh_sd, fresh_base)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{entry_id}: verified" in out and "ok   speedup throughput_1k c=4" in out
    # the baselines' token streams are the entry's (one token a chunk), their times are their own: no copy
    # 115 = 11 categories x 5 + 2 runs x 3 categories x 5 x 2 points
    assert "ok   independent: no request copied from the entry's runs: stored 115, fresh 0" in out
    entry = _stored(seeded_db, entry_id)
    assert entry.trust == "verified" and board.entry_row(entry)["trust"] == "verified"
    record = entry.verification
    assert record["verifier"] == "maintainer A" and len(record["measurement_sha256"]) == 64
    assert sorted(r["dataset_config"] for r in record["runs"]) == ["qualitative", "throughput_1k", "throughput_1k"]
    assert all(c["ok"] for c in record["checks"])
    figures = {c["figure"] for c in record["checks"]}
    assert {"acceptance_length coding", "output_tps throughput_1k c=1", "speedup throughput_1k c=4"} <= figures


def test_the_submitter_s_own_run_folders_do_not_verify(submitted, seeded_db, capsys):
    entry_id, sd, baselines = submitted
    assert _verify(seeded_db, entry_id, sd, baselines) == 1
    out = capsys.readouterr().out
    assert "FAIL independent: not a measurement on the board" in out
    assert "FAIL independent: no request copied from the entry's runs" in out
    assert _stored(seeded_db, entry_id).trust == "self-reported"


def test_a_copy_filed_under_another_model_name_does_not_verify(submitted, seeded_db, tmp_path, capsys):
    entry_id, sd, baselines = submitted
    copies = []
    for run in [*sd, *baselines]:
        copy = shutil.copytree(run, tmp_path / f"copy-{run.name}")
        manifest = json.loads((copy / "manifest.json").read_text())
        manifest.update(model_id="another/model", created_unix_s=time.time() + 1)
        (copy / "manifest.json").write_text(json.dumps(manifest))
        copies.append(copy)
    assert _verify(seeded_db, entry_id, copies[:2], copies[2:]) == 1
    out = capsys.readouterr().out
    assert "FAIL independent: no request copied from the entry's runs" in out and "FAIL model" in out
    assert _stored(seeded_db, entry_id).trust == "self-reported"


def test_a_stored_figure_the_rerun_did_not_measure_is_not_verified(submitted, seeded_db, make_entry_runs, capsys):
    entry_id, _, _ = submitted
    # the Qualitative run alone: the AL agrees, but the stored speedups were never measured again
    qual_only, _ = make_entry_runs(ENGINE, seed=903, throughput=False, started_unix_s=time.time() + 1)
    assert _verify(seeded_db, entry_id, qual_only) == 1
    out = capsys.readouterr().out
    assert "ok   acceptance_length:" in out and "FAIL speedup throughput_1k c=4: stored" in out and "fresh None" in out
    assert _stored(seeded_db, entry_id).trust == "self-reported"


def test_a_rerun_made_before_the_entry_does_not_verify(submitted, seeded_db, make_entry_runs, capsys):
    entry_id, _, _ = submitted
    earlier_sd, earlier_base = make_entry_runs(ENGINE, seed=904)  # dated 2023, before the entry
    assert _verify(seeded_db, entry_id, earlier_sd, earlier_base) == 1
    assert "FAIL made after the entry was submitted" in capsys.readouterr().out


def test_a_rerun_that_disagrees_keeps_the_entry_self_reported(submitted, seeded_db, make_entry_runs, capsys):
    entry_id, _, _ = submitted
    worse_sd, worse_base = make_entry_runs(SimulatedEngine(rates=(0.4, 0.3, 0.2)), seed=905,
                                           started_unix_s=time.time() + 1)
    assert _verify(seeded_db, entry_id, worse_sd, worse_base) == 1
    assert "FAIL acceptance_length:" in capsys.readouterr().out
    assert _stored(seeded_db, entry_id).trust == "self-reported"


def test_verify_needs_a_verifier(submitted, seeded_db, make_entry_runs):
    entry_id, sd, _ = submitted
    with pytest.raises(SystemExit):
        main(["verify", entry_id, "--db", str(seeded_db), "--run", str(sd[0])])


def _retimed_copy(runs, into, shift_s: float, nudge_ns: int):
    """The submitter's own run folders with new timestamps: every record moved ``shift_s`` later and
    its end nudged by ``nudge_ns`` (a new measurement digest, no request with the entry's timing),
    every manifest dated now."""
    copies = []
    for run in runs:
        copy = shutil.copytree(run, into / f"retimed-{run.name}")
        manifest = json.loads((copy / "manifest.json").read_text())
        manifest["created_unix_s"] = manifest["created_unix_s"] + shift_s
        (copy / "manifest.json").write_text(json.dumps(manifest))
        lines = []
        for line in (copy / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            shift = int(shift_s * 1e9)
            for key in ("scheduled_ns", "send_ns", "end_ns"):
                record[key] += shift
            record["end_ns"] += nudge_ns
            record["chunk_ns"] = [t + shift for t in record["chunk_ns"]]
            record["started_unix_s"] += shift_s
            lines.append(json.dumps(record))
        (copy / "records.jsonl").write_text("\n".join(lines) + "\n")
        copies.append(copy)
    return copies


@pytest.mark.parametrize("nudge_ns", [1, 50_000])
def test_the_submitter_s_records_with_new_timestamps_do_not_verify(submitted, seeded_db, tmp_path, capsys, nudge_ns):
    """Reusing the entry's own records, re-dated after the entry and each end moved by a nanosecond
    (or 50 us): a new measurement digest and no request at the entry's exact timing, but nothing
    was measured again (the token streams and every chunk's timing are the entry's)."""
    entry_id, sd, baselines = submitted
    shift = time.time() + 10 - 1.7e9
    copies = _retimed_copy([*sd, *baselines], tmp_path, shift, nudge_ns)
    assert _verify(seeded_db, entry_id, copies[:len(sd)], copies[len(sd):]) == 1
    out = capsys.readouterr().out
    assert "FAIL independent: no request copied from the entry's runs" in out, out
    assert _stored(seeded_db, entry_id).trust == "self-reported"


def test_every_figure_the_board_shows_is_compared(seeded_store):
    """The board shows the request-weighted AL (AL (req.)) and Compare plots median user tokens/s
    against output tokens/s for SD and baseline points: a rerun that differs in any of them alone
    does not reproduce the entry."""
    from speedbench.leaderboard.verify import compare_metrics

    stored = seeded_store.entries()[0].metrics
    assert all(c["ok"] for c in compare_metrics(stored, stored))
    baseline = next(p for p in stored["points"] if p["role"] == "baseline")
    for change in ({"acceptance_length_request_weighted": stored["acceptance"]["acceptance_length_request_weighted"] + 1},
                   "user_tps_p50", "baseline output_tps"):
        fresh = json.loads(json.dumps(stored))
        if isinstance(change, dict):
            fresh["acceptance"].update(change)
            failed = "acceptance_length_request_weighted"
        elif change == "user_tps_p50":
            fresh["points"][0]["user_tps_p50"] /= 2
            point = fresh["points"][0]
            failed = f"user_tps_p50 {point['dataset_config']} c={point['concurrency']}"
        else:
            twin = next(p for p in fresh["points"] if p["role"] == "baseline")
            twin["output_tps"] /= 2
            failed = f"baseline output_tps {baseline['dataset_config']} c={baseline['concurrency']}"
        assert [c["figure"] for c in compare_metrics(stored, fresh) if not c["ok"]] == [failed]
