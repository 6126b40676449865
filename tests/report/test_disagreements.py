"""Where the client's results, the report and the board used to answer differently, on hand-built runs
whose expected figures are worked out by hand in the comments (the core's answer is the one kept).

- Appendix G: the board estimated ``t_ar * AL / t_sd`` from chunk gaps even when chunks were not
  decoding steps; the report did not. Now neither does (speedbench.metrics.load_point).
- K: the report took engine.json before ``--draft-length`` and ignored the server's own description
  (SGLang); results.json took ``--draft-length`` first. Now one precedence (speedbench.metrics.acceptance.draft_length).
- ISL bucket: the report called a qualitative run's bucket "qualitative", the board None, and the
  board missed ``lite_throughput_1k``'s. Now speedbench.schema.isl_bucket for both.
- primary source: chunks that are not steps fell back to the chunk table on the board only.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.validate import ValidatedBundle, compute_entry_metrics, read_runs
from speedbench.metrics.acceptance.from_records import primary_table, record_acceptance
from speedbench.analysis.run_results import compute_results
from speedbench.records import EngineSpecStats, RunManifest, TurnRecord
from speedbench.report.compute import ReportOptions, compute_report
from speedbench.report.runs import load_runs
from speedbench.analysis.run_folder import read_run_folder
from speedbench.schema import isl_bucket

T0 = 10**12  # ns, an arbitrary monotonic-clock origin
MS = 10**6
METADATA = {"model": "m", "drafter": "d", "sd_method": "draft_model", "engine": "llamacpp", "engine_version": "b0",
            "gpu": "cpu", "draft_length": 3, "temperature": 0.0}


def _record(key: str, tokens: list[int], times_ms: list[int], *, stats=None, steps: bool = True) -> TurnRecord:
    return TurnRecord(record_key=f"c1/{key}/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id=key, category="low_entropy", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=1000, prompt_sha256="0" * 64,
                      scheduled_ns=T0, send_ns=T0, end_ns=T0 + times_ms[-1] * MS, started_unix_s=1.8e9,
                      chunk_ns=[T0 + t * MS for t in times_ms], chunk_tokens=tokens, chunks_are_steps=steps,
                      output_tokens=sum(tokens), output_text="x", finish_reason="length", engine_stats=stats)


def _sd_record(steps: bool = True) -> TurnRecord:
    # K = 3: a prefill token, then three decode steps accepting 3, 3 and 2 drafts, 100 ms apart.
    stats = EngineSpecStats(source="hand", verify_steps=3, draft_tokens=9, accepted_tokens=8,
                            acceptance_histogram=[0, 0, 1, 2], draft_length=3, decode_steps=3, drafted_steps=3,
                            accepted_past_max_tokens=0)
    return _record("q1", [1, 4, 4, 3], [50, 150, 250, 350], stats=stats, steps=steps)


def _baseline_record() -> TurnRecord:
    # 12 tokens one at a time: the first at 50 ms, then every 25 ms (last at 325 ms).
    return _record("q1", [1] * 12, [50 + 25 * i for i in range(12)])


def write_run(path: Path, records, *, config: str = "throughput_1k", engine: str = "llamacpp", options=None,
              server=None, engine_info=None) -> Path:
    path.mkdir(parents=True)
    manifest = RunManifest(engine=engine, url="http://127.0.0.1:1", model_id="m", engine_version="v", server=server or {},
                           dataset_dir="d", dataset_config=config, dataset_config_sha256="cd" * 32,
                           dataset_manifest_sha256="", num_rows=1, tokenizer_path="t", tokenizer_sha256="0" * 64,
                           chat_template=False, prompt_mode="completion", options=options or {}, client_version="t",
                           python_version="3.11", created_unix_s=1.8e9)
    (path / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    (path / "records.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    if engine_info is not None:
        (path / "engine.json").write_text(json.dumps(engine_info))
    return path


def _board(sd_dirs, baseline_dirs=()) -> dict:
    meta, runs, _ = read_runs(pack_bundle(list(sd_dirs), METADATA, list(baseline_dirs)))
    return compute_entry_metrics(ValidatedBundle(metadata=meta, runs=runs, files={}, bundle_sha256="",
                                                 archive_sha256=""))


@pytest.mark.parametrize("sd_chunks_are_steps", [True, False])
def test_appendix_g_estimate_is_gated_alike_on_the_board_and_in_the_report(tmp_path, sd_chunks_are_steps):
    sd = write_run(tmp_path / "sd", [_sd_record(sd_chunks_are_steps)], options={"draft_length": 3})
    base = write_run(tmp_path / "base", [_baseline_record()], options={"draft_length": 0})
    # t_sd = 0.1 s (three 100 ms gaps), t_ar = 0.025 s (eleven 25 ms gaps), tokens per decode step
    # = (12 - 1) / 3; S = 0.025 * (11 / 3) / 0.1 = 0.91666...
    expected = 0.025 * (11 / 3) / 0.1 if sd_chunks_are_steps else None
    board = _board([sd], [base])
    (speedup,) = board["speedup"]
    report = compute_report(load_runs([sd, base]), ReportOptions(num_resamples=0))
    (row,) = report.speedup
    for estimate in (speedup["speedup_estimate"], row["estimated_speedup"]):
        assert estimate == (pytest.approx(expected, rel=1e-12) if expected else None)
    # measured: output TPS 12 / 0.35 s (SD) over 12 / 0.325 s (baseline) = 0.325 / 0.35
    assert speedup["speedup_measured"] == pytest.approx(0.325 / 0.35, rel=1e-12)
    assert row["measured_speedup"] == pytest.approx(0.325 / 0.35, rel=1e-12)
    # per-point latency: one routine, so the board's figures are results.json's to the bit
    (point,) = compute_results(sd, num_resamples=0)["points"]
    sd_figures = next(p for p in board["points"] if p["role"] == "sd")
    assert sd_figures["step_latency_mean"] == point["latency"]["step_latency"]["mean"] == pytest.approx(0.1)
    assert sd_figures["output_tps"] == point["latency"]["output_tps"] == pytest.approx(12 / 0.35)


def test_k_has_one_precedence_in_results_and_report(tmp_path):
    # --draft-length 2 given, engine.json says 3: the option wins in results.json and the report alike
    stats = EngineSpecStats(source="hand", verify_steps=3, draft_tokens=6, accepted_tokens=5, decode_steps=3,
                            drafted_steps=3)
    record = _record("q1", [1, 3, 3, 2], [50, 150, 250, 350], stats=stats)
    both = write_run(tmp_path / "both", [record], options={"draft_length": 2},
                     engine_info={"speculation": "draft", "draft_length": 3})
    (run,) = load_runs([both])
    assert run.draft_length == 2
    assert compute_results(both, num_resamples=0)["points"][0]["draft_length"] == 2
    assert compute_report([run], ReportOptions(num_resamples=0)).points[0]["draft_length"] == 2
    # SGLang without --draft-length: speculative_num_draft_tokens = 4 counts the verified token, so K = 3
    sglang = write_run(tmp_path / "sglang", [record], engine="sglang",
                       server={"server_info": {"speculative_num_draft_tokens": 4}})
    (run,) = load_runs([sglang])
    assert (run.speculative, run.draft_length, run.label) == (True, 3, "SD speculative K=3")
    assert compute_results(sglang, num_resamples=0)["points"][0]["draft_length"] == 3


def test_isl_bucket_has_one_answer(tmp_path):
    assert [isl_bucket(c) for c in ("qualitative", "throughput_8k", "lite_throughput_1k", None)] == \
        [None, "8k", "1k", None]
    qual = write_run(tmp_path / "qual", [_sd_record()], config="qualitative", options={"draft_length": 3})
    lite = write_run(tmp_path / "lite", [_sd_record()], config="lite_throughput_1k", options={"draft_length": 3})
    board = _board([qual, lite])
    assert {p["dataset_config"]: p["isl"] for p in board["points"]} == {"qualitative": None, "lite_throughput_1k": "1k"}
    assert board["acceptance"]["dataset_configs"] == ["qualitative"]  # the board's AL: the qualitative run only
    report = compute_report(load_runs([qual, lite]), ReportOptions(num_resamples=0))
    assert {r["dataset_config"]: r["isl_bucket"] for r in report.points} == \
        {"qualitative": None, "lite_throughput_1k": "1k"}


def test_chunks_that_are_not_steps_are_no_primary_source(tmp_path):
    plain = _record("q1", [1, 4, 4, 3], [50, 150, 250, 350], steps=False)
    assert primary_table([plain], 3) == (None, None)
    assert record_acceptance([plain], 3, num_resamples=0).primary is None
    table, name = primary_table([_record("q1", [1, 4, 4, 3], [50, 150, 250, 350])], 3)
    assert name == "chunks" and table is not None
    folder = read_run_folder(write_run(tmp_path / "run", [plain], engine="openai", options={"draft_length": 3}))
    assert (folder.speculative, folder.draft_length) == (True, 3)


def test_submit_takes_k_from_the_same_precedence_and_dry_runs_a_run_without_al(tmp_path, capsys, monkeypatch):
    from speedbench.cli import main

    from speedbench.leaderboard.known_builds import KnownBuilds

    # no dataset builds known here: the dry run checks everything but the build (its own fallback)
    monkeypatch.setattr(KnownBuilds, "load", classmethod(lambda cls, paths=None: cls()))
    # an OpenAI-compatible SGLang stream without --draft-length: K = 4 - 1 from the server's description
    run = write_run(tmp_path / "run", [_record("q1", [1, 4, 4, 3], [50, 150, 250, 350], steps=False)],
                    config="qualitative", engine="sglang", server={"server_info": {"speculative_num_draft_tokens": 4}})
    out = tmp_path / "bundle.tar.gz"
    code = main(["submit", str(run), "--drafter", "d", "--method", "eagle3", "--gpu", "cpu", "--temperature", "0",
                 "--out", str(out), "--dry-run"])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, captured.err
    meta, _, _ = read_runs(out.read_bytes())
    assert meta.draft_length == 3
    assert printed.startswith("no AL: no acceptance source")


def test_a_draft_tree_is_held_to_its_nodes_on_the_board_as_in_results(tmp_path):
    # SGLang EAGLE tree: top-k 4, depth 3, 6 draft tokens (5 nodes + the verified one) per verify.
    # Three verifies propose 5 nodes each, 15 drafted tokens, and accept 3, 3 and 2 (at most the depth):
    # within 3 x 5 proposals, but more than a chain of K = 3 proposes (3 x 3 = 9).
    tree = {"speculative_eagle_topk": 4, "speculative_num_steps": 3, "speculative_num_draft_tokens": 6}
    stats = EngineSpecStats(source="hand", verify_steps=3, draft_tokens=15, accepted_tokens=8,
                            acceptance_histogram=[0, 0, 1, 2], draft_length=3, decode_steps=3, drafted_steps=3)
    run = write_run(tmp_path / "tree", [_record("q1", [1, 4, 4, 3], [50, 150, 250, 350], stats=stats)],
                    engine="sglang", config="qualitative", server={"server_info": tree})
    (point,) = compute_results(run, num_resamples=0)["points"]
    assert point["consistency"] == {}
    meta, runs, _ = read_runs(pack_bundle([run], {**METADATA, "engine": "sglang"}, []))
    assert meta.draft_length == 3
    (board_run,) = runs
    assert board_run.records[0].engine_stats.draft_tokens == 15
    # A chain (no top-k) with the same counts is still refused: 15 drafts over 3 verifies of K = 3.
    chain = write_run(tmp_path / "chain", [_record("q1", [1, 4, 4, 3], [50, 150, 250, 350], stats=stats)],
                      engine="sglang", config="qualitative", server={"server_info": {"speculative_num_steps": 3}})
    with pytest.raises(Exception, match="drafted") as refused:
        read_runs(pack_bundle([chain], {**METADATA, "engine": "sglang"}, []))
    assert getattr(refused.value, "rule", None) == "stats.drafted_vs_steps"


def test_a_strangers_server_description_that_is_not_numbers_counts_as_absent():
    from speedbench.metrics.acceptance.draft_length import server_draft_length, server_draft_nodes

    assert server_draft_nodes({"speculative_eagle_topk": "many", "speculative_num_draft_tokens": 6}) is None
    assert server_draft_nodes({"speculative_eagle_topk": 4, "speculative_num_draft_tokens": [6]}) is None
    assert server_draft_nodes("not an object") is None
    assert server_draft_length({"speculative_eagle_topk": None, "speculative_num_draft_tokens": "4"}) == 3
    assert server_draft_length({"speculative_eagle_topk": 4, "speculative_num_steps": 3,
                                "speculative_num_draft_tokens": 6}) == 3
