"""The report's numbers are the metrics core's numbers on the same records, and match hand values."""
from __future__ import annotations

import json
import math

import pytest

from speedbench import metrics as M
from speedbench.records import read_records
from speedbench.report import RunFolderError, build_report


@pytest.fixture
def report(synthetic_report):
    return synthetic_report


def _point_records(run_dir, point):
    return [r for r in read_records(run_dir / "records.jsonl") if r.run_point == point and not r.warmup]


def _timings(records):
    return M.timings_from_lists([r.scheduled_ns / 1e9 for r in records], [[t / 1e9 for t in r.chunk_ns] for r in records],
                                [r.chunk_tokens for r in records])


def test_acceptance_equals_metrics_core(report, synthetic_runs):
    _, data = report
    for point in ("c1", "c2"):
        records = _point_records(synthetic_runs["sd"], point)
        common = dict(categories=[r.category for r in records], question_ids=[r.question_id for r in records],
                      finish_reasons=[r.finish_reason for r in records])
        # AL and its CI: the engine's per-request counts (the primary source when every request has them).
        engine = M.summarize_acceptance(M.requests_from_counts(
            [r.engine_stats.verify_steps for r in records], [r.engine_stats.accepted_tokens for r in records],
            [r.engine_stats.draft_tokens for r in records], **common), num_resamples=1000)
        rows = {r["category"]: r for r in data["acceptance"] if r["run"] == "sd" and r["point"] == point}
        assert set(rows) == {"all", "coding", "writing", "math"}
        assert {r["source"] for r in rows.values()} == {"engine"}
        assert rows["all"]["acceptance_length"] == engine.acceptance_length
        assert [rows["all"]["acceptance_length_ci_low"], rows["all"]["acceptance_length_ci_high"]] == \
            engine.acceptance_length_ci
        for category, summary in engine.per_category.items():
            assert rows[category]["acceptance_length"] == summary["acceptance_length"]
            assert rows[category]["acceptance_length_request_weighted"] == summary["acceptance_length_request_weighted"]
            assert [rows[category]["acceptance_length_ci_low"], rows[category]["acceptance_length_ci_high"]] == \
                summary["acceptance_length_ci"]
        # Per-position rates: the chunks, which are verification steps here (histograms per request).
        chunks = M.summarize_acceptance(M.requests_from_step_sizes(
            [r.chunk_tokens for r in records], draft_length=4, **common), num_resamples=1000)
        positions = sorted((r for r in data["position_rates"] if r["run"] == "sd" and r["point"] == point
                            and r["category"] == "all"), key=lambda r: r["position"])
        assert [r["conditional_acceptance_rate"] for r in positions] == chunks.conditional_acceptance_rate
        assert [[r["ci_low"], r["ci_high"]] for r in positions] == chunks.conditional_acceptance_rate_ci


def test_hand_computed_values(report):
    _, data = report
    # "math" accepts every draft. Each request: prefill token, four steps of K+1 = 5 tokens, then
    # a step cut to 3 tokens by max_tokens = 24: 5 verify steps, 4 * 4 + 2 = 18 accepted drafts,
    # AL = 1 + 18 / 5 = 4.6 for every request, so the interval is degenerate.
    math_row = next(r for r in data["acceptance"] if r["run"] == "sd" and r["point"] == "c1" and r["category"] == "math")
    assert math_row["acceptance_length"] == pytest.approx(4.6, abs=1e-12)
    assert math_row["acceptance_length_ci_low"] == pytest.approx(4.6, abs=1e-12)
    assert math_row["acceptance_length_ci_high"] == pytest.approx(4.6, abs=1e-12)
    # Chunk-based per-position rates drop the cut last step: every remaining step accepted all 4.
    math_rates = [r["conditional_acceptance_rate"] for r in data["position_rates"]
                  if r["run"] == "sd" and r["point"] == "c1" and r["category"] == "math"]
    assert math_rates == [1.0, 1.0, 1.0, 1.0]
    points = {(p["run"], p["point"]): p for p in data["points"]}
    # Baseline: 18 requests of 24 tokens, each 0.05 s TTFT + 23 steps of 0.01 s = 0.28 s.
    c1, c2 = points[("baseline", "c1")], points[("baseline", "c2")]
    assert c1["output_tps"] == pytest.approx(18 * 24 / (18 * 0.28), rel=1e-9)
    assert c2["output_tps"] == pytest.approx(18 * 24 / (9 * 0.28), rel=1e-9)
    assert c2["achieved_concurrency"] == pytest.approx(2.0, rel=1e-9)
    assert c1["ttft_p50_s"] == pytest.approx(0.05, abs=1e-9)
    assert c1["step_latency_p99_s"] == pytest.approx(0.01, abs=1e-9)
    assert c1["tpot_mean_s"] == pytest.approx(0.01, abs=1e-9)
    assert c1["e2e_p50_s"] == pytest.approx(0.28, abs=1e-9)
    assert c1["max_tokens_share"] == 1.0
    assert "acceptance_length" not in c1  # no speculation, no acceptance figures
    # Appendix G with t_ar = 0.01 s and t_sd = 0.02 s: S = AL / 2.
    assert {row["concurrency"] for row in data["speedup"]} == {1, 2}
    for row in data["speedup"]:
        sd_point = points[("sd", f"c{row['concurrency']}")]
        base_point = points[("baseline", f"c{row['concurrency']}")]
        assert row["t_ar_s"] == pytest.approx(0.01, abs=1e-9)
        assert row["t_sd_s"] == pytest.approx(0.02, abs=1e-9)
        assert row["estimated_speedup"] == pytest.approx(sd_point["acceptance_length"] / 2, rel=1e-9)
        assert row["measured_speedup"] == pytest.approx(sd_point["output_tps"] / base_point["output_tps"], rel=1e-12)


def test_latency_equals_metrics_core(report, synthetic_runs):
    _, data = report
    for run in ("sd", "baseline"):
        for point in ("c1", "c2"):
            records = _point_records(synthetic_runs[run], point)
            expected = M.summarize_latency(_timings(records), requested_concurrency=records[0].requested_concurrency)
            row = next(p for p in data["points"] if p["run"] == run and p["point"] == point)
            assert row["output_tps"] == pytest.approx(expected.output_tps, rel=1e-12)
            assert row["achieved_concurrency"] == pytest.approx(expected.achieved_concurrency, rel=1e-12)
            assert row["user_tps_mean"] == pytest.approx(expected.user_tps.mean, rel=1e-12)
            for quantity in ("ttft", "step_latency", "tpot", "e2e"):
                for stat in ("mean", "p50", "p90", "p99"):
                    assert row[f"{quantity}_{stat}_s"] == pytest.approx(getattr(getattr(expected, quantity), stat),
                                                                        rel=1e-9)


def test_markdown_csv_and_json_carry_the_same_numbers(report):
    files, data = report
    markdown = files.markdown.read_text()
    al = next(r for r in data["acceptance"] if r["run"] == "sd" and r["point"] == "c1" and r["category"] == "all")
    assert f"{al['acceptance_length']:.3f}" in markdown
    csv_text = files.csv["acceptance"].read_text()
    assert repr(al["acceptance_length"]) in csv_text
    assert "speedup" in files.csv and "points" in files.csv
    assert set(files.figures) >= {"acceptance_by_category", "conditional_acceptance", "pareto", "speedup", "latency"}


def test_best_draft_length_picks_highest_throughput(synthetic_runs, tmp_path, run_writer):
    k2 = run_writer(tmp_path / "k2", speculative=True, draft_length=2, step_s=0.012, seed=5)
    files = build_report([synthetic_runs["sd"], k2, synthetic_runs["baseline"]], tmp_path / "out")
    data = json.loads(files.json.read_text())
    for row in data["best_draft_length"]:
        candidates = {int(p["draft_length"]): p["output_tps"] for p in data["points"]
                      if p["requested_concurrency"] == row["concurrency"]}
        assert row["best_draft_length"] == max(candidates, key=candidates.get)
        assert row["best_output_tps"] == max(candidates.values())
    assert {r["concurrency"] for r in data["best_draft_length"]} == {1, 2}


def test_flags_errors_and_merged_chunks(tmp_path, run_writer, records_maker):
    base = records_maker(speculative=True, draft_length=4, concurrency=1, per_category=1, max_tokens=24,
                             ttft_s=0.05, step_s=0.02, seed=0)
    failed = base[0].__class__(**{**base[0].__dict__, "record_key": "c1/x/0", "question_id": "x",
                                  "chunk_ns": [], "chunk_tokens": [], "error": "HTTP 503 <busy>", "error_kind": "http_5xx",
                                  "finish_reason": None, "engine_stats": None})
    merged = base[1].__class__(**{**base[1].__dict__, "record_key": "c1/y/0", "question_id": "y",
                                  "chunk_tokens": [1, 9, 5, 5, 4], "chunk_ns": base[1].chunk_ns[:5]})
    run = run_writer(tmp_path / "flags", speculative=True, concurrencies=(), extra_records=base + [failed, merged])
    files = build_report([run], tmp_path / "out")
    data = json.loads(files.json.read_text())
    kinds = {(f["flag"], f["kind"]): f for f in data["flags"]}
    assert kinds[("errors", "http_5xx")]["count"] == 1
    assert kinds[("merged_chunks", "client analysis")]["detail"].startswith("1 chunk(s) larger than K+1 = 5")
    point = data["points"][0]
    assert (point["num_requests"], point["num_errors"]) == (len(base) + 2, 1)
    html = files.html.read_text()
    assert "HTTP 503 &lt;busy&gt;" in html


def test_html_escapes_text(report):
    files, _ = report
    html = files.html.read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_bad_run_folder_names_the_file(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunFolderError, match="manifest.json"):
        build_report([tmp_path / "empty"], tmp_path / "out")
    from speedbench.cli import main

    assert main(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 1


def test_nan_free_json(report):
    files, _ = report
    text = files.json.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert not any(isinstance(v, float) and math.isnan(v) for v in json.loads(text)["points"][0].values())


def test_losslessness_table_and_flag(tmp_path, run_writer, records_maker):
    """SD and baseline on the same prompts; one planted divergence at token 7, one request whose
    prompt differs, one without ids: 4 compared, 3 identical, flagged (not dropped)."""
    def records(speculative):
        made = records_maker(speculative=speculative, draft_length=4, concurrency=1, per_category=2, max_tokens=24,
                             ttft_s=0.05, step_s=0.02 if speculative else 0.01, seed=3)
        for index, record in enumerate(made):
            record.prompt_sha256 = f"{index:064d}"
            record.output_token_ids = list(range(100, 100 + record.output_tokens))
            record.output_token_ids_source = "engine"
        return made

    sd, base = records(True), records(False)
    assert len(sd) == len(base) == 6
    sd[1].output_token_ids[7] = 999
    base[2].prompt_sha256 = "f" * 64
    base[3].output_token_ids, base[3].output_token_ids_source = None, None
    sd_dir = run_writer(tmp_path / "sd", speculative=True, concurrencies=(), extra_records=sd)
    base_dir = run_writer(tmp_path / "base", speculative=False, concurrencies=(), extra_records=base)
    files = build_report([sd_dir, base_dir], tmp_path / "out")
    data = json.loads(files.json.read_text())
    [row] = data["losslessness"]
    assert (row["point"], row["num_compared"], row["num_identical"], row["num_divergent"]) == ("c1", 4, 3, 1)
    assert row["share_identical"] == 0.75 and row["earliest_divergence"] == 7 and row["ids"] == "engine"
    assert row["skipped"] == {"prompt_differs": 1, "no_token_ids": 1}
    diverged = [r for r in row["requests"] if r["first_divergence"] is not None]
    assert diverged == [{"request": f"{sd[1].question_id}/0", "first_divergence": 7, "sd_tokens": 24,
                         "baseline_tokens": 24}]
    [flag] = [f for f in data["flags"] if f["flag"] == "outputs_differ_from_baseline"]
    assert flag["count"] == 1 and "3 of 4 outputs identical" in flag["detail"]
    assert "not bitwise deterministic" in flag["detail"]
    assert "Losslessness" in files.html.read_text() and "losslessness" in files.csv
    assert data["points"]  # the SD run is still reported in full
