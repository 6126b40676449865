"""results.json (the client), the report and the leaderboard's recompute give identical acceptance
numbers on the same records: one path (speedbench.metrics.record_acceptance) from records to AL.

The records hold what makes paths diverge: merged chunks, a failed request, warmup requests,
multi-turn requests (turns pooled per question id), with and without engine statistics.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from speedbench.leaderboard.recompute import recompute_metrics
from speedbench.leaderboard.records_adapter import parse_run
from speedbench.metrics.run_results import compute_results
from speedbench.report.compute import ReportOptions, compute_report
from speedbench.report.runs import load_run

K = 4
KEYS = ("acceptance_length", "acceptance_length_ci", "acceptance_length_request_weighted",
        "tokens_per_decode_step", "num_requests", "num_steps")


def _awkward_records(records_maker, engine_stats: bool):
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
    return base + [merged, failed, turn] + warmup


def _numbers(summary: dict) -> dict:
    return {k: summary.get(k) for k in KEYS}


@pytest.mark.parametrize("engine_stats", [True, False])
def test_client_report_and_board_agree(tmp_path, run_writer, records_maker, engine_stats):
    run_dir = run_writer(tmp_path / "run", speculative=True, draft_length=K, concurrencies=(),
                         extra_records=_awkward_records(records_maker, engine_stats))
    client = compute_results(run_dir, num_resamples=1000, draft_length=K)["points"]
    assert len(client) == 1
    point = client[0]
    primary = point["primary_acceptance_source"]
    assert primary == ("engine" if engine_stats else "chunks")
    assert point["num_errors"] == 1 and point["num_warmup_excluded"] == 2
    client_numbers = _numbers(point["acceptance"][primary])

    report = compute_report([load_run(run_dir)], ReportOptions(num_resamples=1000))
    (row,) = report.points
    assert row["acceptance_source"] == primary
    assert row["acceptance_length"] == client_numbers["acceptance_length"]
    assert [row["acceptance_length_ci_low"], row["acceptance_length_ci_high"]] == client_numbers["acceptance_length_ci"]
    assert row["tokens_per_decode_step"] == client_numbers["tokens_per_decode_step"]
    assert _numbers(report.details[f"{row['run']}/c1"]["acceptance"][primary]) == client_numbers

    files = {f"runs/sd/{p.name}": p.read_bytes() for p in Path(run_dir).iterdir() if p.is_file()}
    board = recompute_metrics([parse_run("runs/sd", "sd", files)], K)
    assert board["acceptance"]["acceptance_source"] == primary
    assert _numbers(board["acceptance"]) == client_numbers
    per_category = point["acceptance"][primary]["per_category"]
    assert {c: v["acceptance_length"] for c, v in board["acceptance"]["per_category"].items()} == \
        {c: v["acceptance_length"] for c, v in per_category.items()}
    (figures,) = board["points"]
    assert figures["acceptance_length"] == client_numbers["acceptance_length"]
    assert figures["tokens_per_decode_step"] == client_numbers["tokens_per_decode_step"]
    assert json.dumps(board)  # JSON-safe


def test_merged_chunks_are_left_out_of_the_chunk_source(tmp_path, run_writer, records_maker):
    run_dir = run_writer(tmp_path / "run", speculative=True, draft_length=K, concurrencies=(),
                         extra_records=_awkward_records(records_maker, engine_stats=False))
    point = compute_results(run_dir, num_resamples=0, draft_length=K)["points"][0]
    report = point["acceptance"]["chunks"]["trim_report"]
    assert report["num_merged_chunks"] == 1  # the 9-token chunk (> K + 1 = 5)
    assert any(f.startswith("merged_chunks") for f in point["flags"])
    assert not any(f.startswith("disagreement") for f in point["flags"])
