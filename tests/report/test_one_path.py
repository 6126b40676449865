"""results.json (the client), the report and the board give identical acceptance numbers on the same
records: one reader (speedbench.analysis.run_folder) and one path (speedbench.metrics.acceptance.from_records) from
a run folder to AL.

The board's side is the code the Space runs on an upload: the folder packed into a bundle
(``pack_bundle``), read back with ``read_runs`` (``speedbench.leaderboard.runs.read_run``: the
one reader under the board's rules) and its figures computed by ``compute_entry_metrics``.

The Compare tab (an entry paired with itself) and ``speedbench vocab-coverage`` give the same AL per
category: all of them take their records from ``speedbench.analysis.selection``.

The records hold what makes paths diverge: merged chunks, a failed request, warmup requests,
multi-turn requests (turns pooled per question id). Three kinds of run: an engine with per-request
statistics, one with only Prometheus counters (chunks are steps), and an OpenAI-compatible stream
(no statistics, chunks are not steps: no AL anywhere).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from speedbench.cli.vocab_coverage import _category_al
from speedbench.leaderboard.board import _acceptance_records
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.recompute import compare_runs
from speedbench.leaderboard.validate import ValidatedBundle, compute_entry_metrics, read_runs
from speedbench.analysis.run_results import compute_results
from speedbench.report.compute import ReportOptions, compute_report
from speedbench.report.runs import load_run

K = 4
KEYS = ("acceptance_length", "acceptance_length_ci", "acceptance_length_request_weighted",
        "tokens_per_decode_step", "num_requests", "num_steps")
METADATA = {"model": "stories260K", "drafter": "stories260K-q4", "sd_method": "draft_model", "engine": "llamacpp",
            "engine_version": "b0", "gpu": "cpu", "draft_length": K, "temperature": 0.0}
# case: (per-request engine statistics, chunks are steps, a counters.jsonl) -> the primary source
CASES = {"engine": (True, True, False, "engine"), "counters_only": (False, True, True, "chunks"),
         "openai": (False, False, False, None)}


def _awkward_records(records_maker, engine_stats: bool, steps: bool, merged_steps: bool | None = None):
    """``merged_steps``: whether the record with a 9-token chunk says its chunks are steps (the board
    refuses a step larger than K + 1, the client leaves it out); None: no such record."""
    base = records_maker(speculative=True, draft_length=K, concurrency=1, per_category=3, max_tokens=40,
                         ttft_s=0.05, step_s=0.02, seed=3)
    if not engine_stats:
        base = [dataclasses.replace(r, engine_stats=None) for r in base]
    merged = dataclasses.replace(base[1], record_key="c1/merged/0", question_id="merged",
                                 chunk_tokens=[1, 9, 5, 5, 4], chunk_ns=base[1].chunk_ns[:5],
                                 end_ns=base[1].chunk_ns[4], output_tokens=24, engine_stats=base[1].engine_stats and dataclasses.replace(
                                     base[1].engine_stats, verify_steps=7, accepted_tokens=16, draft_tokens=28))
    failed = dataclasses.replace(base[0], record_key="c1/failed/0", question_id="failed", chunk_ns=[], chunk_tokens=[],
                                 error="HTTP 503", error_kind="http_5xx", finish_reason=None, engine_stats=None)
    warmup = [dataclasses.replace(r, record_key=f"c1/warmup/{i}", warmup=True, chunk_tokens=[1, 5, 5, 5],
                                  chunk_ns=r.chunk_ns[:4], end_ns=r.chunk_ns[3]) for i, r in enumerate(base[:2])]
    # a second turn of the first question: pooled with its first turn into one request
    turn = dataclasses.replace(base[0], record_key=f"c1/{base[0].question_id}/1", turn_index=1, num_turns=2)
    records = [dataclasses.replace(r, chunks_are_steps=steps) for r in base + [failed, turn] + warmup]
    return records + ([dataclasses.replace(merged, chunks_are_steps=merged_steps)] if merged_steps is not None else [])


def _counters_line(records) -> str:
    """llama.cpp's counter deltas over the point, as the engine counts them (drafted steps of K)."""
    ok = [r for r in records if r.ok and not r.warmup]
    steps = sum(len(r.chunk_tokens) - 1 for r in ok)
    emitted = sum(r.output_tokens for r in ok)
    delta = {"llamacpp:spec_decode_num_drafts_total": steps, "llamacpp:spec_decode_num_draft_tokens_total": K * steps,
             "llamacpp:spec_decode_num_accepted_tokens_total": emitted - len(ok) - steps,
             "llamacpp:tokens_predicted_total": emitted}
    return json.dumps({"run_point": "c1", "delta": delta, "complete": True}) + "\n"


def board_metrics(sd_dirs, baseline_dirs=(), metadata=METADATA) -> dict:
    """What the Space computes for these run folders: packed, read back by the board's reader, recomputed."""
    meta, runs, _ = read_runs(pack_bundle([Path(d) for d in sd_dirs], metadata, [Path(d) for d in baseline_dirs]))
    return compute_entry_metrics(ValidatedBundle(metadata=meta, runs=runs, files={}, bundle_sha256="",
                                                 archive_sha256=""))


def _numbers(summary: dict) -> dict:
    return {k: summary.get(k) for k in KEYS}


@pytest.mark.parametrize("case", CASES)
def test_client_report_and_board_agree(tmp_path, run_writer, records_maker, case):
    engine_stats, steps, counters, primary = CASES[case]
    # the engine case keeps a merged chunk, streamed by an adapter that cannot vouch for steps
    records = _awkward_records(records_maker, engine_stats, steps, merged_steps=False if engine_stats else None)
    run_dir = run_writer(tmp_path / "run", speculative=True, draft_length=K, concurrencies=(), extra_records=records)
    if counters:
        (run_dir / "counters.jsonl").write_text(_counters_line(records))
    (point,) = compute_results(run_dir, num_resamples=1000, draft_length=K)["points"]
    assert point["primary_acceptance_source"] == primary
    assert point["num_errors"] == 1 and point["num_warmup_excluded"] == 2
    assert ("counters" in point["acceptance"]) == counters
    report = compute_report([load_run(run_dir)], ReportOptions(num_resamples=1000))
    (row,) = report.points
    board = board_metrics([run_dir])
    (figures,) = board["points"]
    assert board["acceptance"]["acceptance_source"] == primary
    assert json.dumps(board)  # JSON-safe
    if primary is None:  # no statistics and chunks that are not steps: no AL in any of the three
        assert row.get("acceptance_length") is None and "acceptance_source" not in row
        assert board["acceptance"]["acceptance_length"] is None and figures["acceptance_length"] is None
        assert board["acceptance"]["per_category"] == {}
        return
    client_numbers = _numbers(point["acceptance"][primary])
    assert row["acceptance_source"] == primary
    assert row["acceptance_length"] == client_numbers["acceptance_length"]
    assert [row["acceptance_length_ci_low"], row["acceptance_length_ci_high"]] == client_numbers["acceptance_length_ci"]
    assert row["tokens_per_decode_step"] == client_numbers["tokens_per_decode_step"]
    assert _numbers(report.details[f"{row['run']}/c1"]["acceptance"][primary]) == client_numbers
    assert _numbers(board["acceptance"]) == client_numbers
    per_category = point["acceptance"][primary]["per_category"]
    assert {c: v["acceptance_length"] for c, v in board["acceptance"]["per_category"].items()} == \
        {c: v["acceptance_length"] for c, v in per_category.items()}
    assert figures["acceptance_length"] == client_numbers["acceptance_length"]
    assert figures["tokens_per_decode_step"] == client_numbers["tokens_per_decode_step"]
    # the Compare tab (an entry against itself: every prompt pairs) and vocab-coverage, per category
    expected = {c: pytest.approx(v["acceptance_length"], rel=1e-12) for c, v in per_category.items()}
    archive = pack_bundle([run_dir], METADATA, [])
    compared = compare_runs(*[_acceptance_records(archive)[0]] * 2, K, K)
    assert {c: v["acceptance_length"]["value_a"] for c, v in compared.items() if c != "all"} == expected
    assert _category_al(load_run(run_dir)) == expected
    # latency: the same per-point routine (speedbench.metrics.load_point) in results.json and on the board
    assert figures["output_tps"] == point["latency"]["output_tps"]
    assert figures["step_latency_mean"] == point["latency"]["step_latency"]["mean"]


def test_merged_chunks_are_left_out_of_the_chunk_source(tmp_path, run_writer, records_maker):
    run_dir = run_writer(tmp_path / "run", speculative=True, draft_length=K, concurrencies=(),
                         extra_records=_awkward_records(records_maker, engine_stats=False, steps=True, merged_steps=True))
    point = compute_results(run_dir, num_resamples=0, draft_length=K)["points"][0]
    report = point["acceptance"]["chunks"]["trim_report"]
    assert report["num_merged_chunks"] == 1  # the 9-token chunk (> K + 1 = 5)
    assert any(f.startswith("merged_chunks") for f in point["flags"])
    assert not any(f.startswith("disagreement") for f in point["flags"])
