"""`speedbench compare`: peers' saved files (in the shapes their code writes) read back, set beside our
view of a hand-built run, each difference classified."""
from __future__ import annotations

import hashlib
import json

import pytest

from speedbench.cli import main
from speedbench.peers.compare import EQUAL, MEASURED, MISMATCH, MISSING, compare, detect_tool, select_point
from speedbench.peers.view import PEERS
from tests.peers.records import record, write_run

# Two single-turn requests on a vLLM server, K = 3: (steps, drafted, accepted, histogram) per request.
RUN = [("q1", "writing", 0.0, (0.1, 0.3, 0.6), (1, 3, 4), 2, 6, 5, [0, 0, 1, 1]),
       ("q2", "qa", 1.0, (1.2, 1.5, 1.7), (1, 2, 1), 2, 6, 1, [1, 1, 0, 0])]
# Counter deltas over the point: 4 drafts, 12 draft tokens, 6 accepted (3 / 2 / 1 at positions 0 / 1 / 2, as the
# histograms say: 3 steps accepted position 0, 2 position 1, 1 position 2)
BEFORE = {"vllm:spec_decode_num_drafts_total": 10.0, "vllm:spec_decode_num_draft_tokens_total": 30.0,
          "vllm:spec_decode_num_accepted_tokens_total": 7.0}
AFTER = {"vllm:spec_decode_num_drafts_total": 14.0, "vllm:spec_decode_num_draft_tokens_total": 42.0,
         "vllm:spec_decode_num_accepted_tokens_total": 13.0}
POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


@pytest.fixture()
def run_dir(tmp_path):
    records = [record(q, c, send=s, chunks=t, tokens=n, accepted=a, drafted=d, steps=st, histogram=h,
                      end=t[-1] + 0.05) for q, c, s, t, n, st, d, a, h in RUN]
    counters = [{"run_point": "c1", "complete": True, "unix_s": 0,
                 "before": {"totals": BEFORE, "per_position": {POS: {"0": 4, "1": 2, "2": 1}}},
                 "after": {"totals": AFTER, "per_position": {POS: {"0": 7, "1": 4, "2": 2}}}}]
    return write_run(tmp_path / "run", records, "vllm", counters)


def vllm_result(**overrides) -> dict:
    """The keys vllm bench serve --save-result writes (spec figures worked out from the counters above)."""
    data = {"date": "20260101-000000", "backend": "vllm", "label": None, "model_id": "m", "tokenizer_id": "m",
            "num_prompts": 2, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 1, "duration": 1.9,
            "completed": 2, "failed": 0, "total_input_tokens": 10, "total_output_tokens": 12,
            "request_throughput": 1.05, "output_throughput": 6.3, "total_token_throughput": 11.5,
            "mean_ttft_ms": 160.0, "median_ttft_ms": 160.0, "std_ttft_ms": 40.0, "p99_ttft_ms": 199.0,
            "mean_tpot_ms": 100.0, "median_tpot_ms": 100.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 100.0,
            "mean_itl_ms": 200.0, "median_itl_ms": 200.0, "std_itl_ms": 50.0, "p99_itl_ms": 300.0,
            "spec_decode_acceptance_rate": 50.0, "spec_decode_acceptance_length": 2.5, "spec_decode_num_drafts": 4,
            "spec_decode_draft_tokens": 12, "spec_decode_accepted_tokens": 6,
            "spec_decode_per_position_acceptance_rates": [0.75, 0.5, 0.25]}
    data.update(overrides)
    return data


def test_vllm_result_equal_to_our_view_exits_0(run_dir, tmp_path, capsys):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(vllm_result()))
    assert detect_tool(path) == "vllm"
    code = main(["compare", str(path), str(run_dir), "--json", str(tmp_path / "rows.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = {r["figure"]: r for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    al = rows["spec_decode_acceptance_length"]
    assert al["verdict"] == EQUAL and al["peer_view"] == 2.5
    # our engine statistics: 1 + (5 + 1) / (2 + 2) = 2.5 over drafted steps, the same definition
    assert al["ours"] == 2.5 and "same definition" in al["cause"]
    assert rows["spec_decode_acceptance_rate"]["ours"] == pytest.approx(50.0)  # 6 / 12, shown in percent
    assert rows["spec_decode_per_position_acceptance_rates"]["verdict"] == EQUAL
    assert rows["spec_decode_per_position_acceptance_rates"]["ours"] == pytest.approx([0.75, 0.5, 0.25])
    assert rows["completed"]["verdict"] == EQUAL and rows["total_output_tokens"]["verdict"] == EQUAL
    assert rows["mean_ttft_ms"]["verdict"] == MEASURED and "another run" in rows["mean_ttft_ms"]["cause"]
    # what produced the comparison: both inputs, named and hashed
    saved = json.loads((tmp_path / "rows.json").read_text())
    assert saved["generator"].startswith("speedbench compare ")
    assert saved["peer_file"] == {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert saved["run"] == {"path": str(run_dir), "records_sha256":
                            hashlib.sha256((run_dir / "records.jsonl").read_bytes()).hexdigest()}


def test_a_count_no_definition_explains_is_a_mismatch(run_dir, tmp_path, capsys):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(vllm_result(spec_decode_accepted_tokens=7, spec_decode_acceptance_length=2.75)))
    assert main(["compare", str(path), str(run_dir), "--json", str(tmp_path / "rows.json")]) == 1
    out = capsys.readouterr().out
    assert "mismatch" in out and "no definition explains it" in out
    verdicts = {r["figure"]: r["verdict"] for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert verdicts["spec_decode_accepted_tokens"] == verdicts["spec_decode_acceptance_length"] == MISMATCH
    assert verdicts["spec_decode_num_drafts"] == EQUAL  # the drafts did not change


def test_llamacpp_output_compared_per_category(tmp_path):
    records = [record(q, c, send=s, chunks=t, tokens=n, accepted=a, drafted=d, steps=st, end=t[-1] + 0.05)
               for q, c, s, t, n, st, d, a, _ in RUN]
    run_dir = write_run(tmp_path / "run", records, "llamacpp")
    # worked out from RUN: writing 5 of 6 accepted, latency 0.65 s; qa 1 of 6, 0.75 s; overall 6 of 12
    summary = [{"category": "writing", "requests": 1, "turns": 1, "failed": 0, "avg_prompt_t_s": None,
                "avg_pred_t_s": None, "avg_latency": 0.65, "draft_n": 6, "accepted": 5, "accept_rate": 5 / 6},
               {"category": "qa", "requests": 1, "turns": 1, "failed": 0, "avg_prompt_t_s": None,
                "avg_pred_t_s": None, "avg_latency": 0.75, "draft_n": 6, "accepted": 1, "accept_rate": 1 / 6},
               {"category": "overall", "requests": 2, "turns": 2, "failed": 0, "avg_prompt_t_s": None,
                "avg_pred_t_s": None, "avg_latency": 0.7, "draft_n": 12, "accepted": 6, "accept_rate": 0.5}]
    path = tmp_path / "llama.json"
    path.write_text(json.dumps({"config": {"bench": "qualitative", "concurrency": 1}, "selected_samples": 2,
                                "completed_samples": 2, "failed_samples": 0, "summary": summary, "results": []}))
    assert detect_tool(path) == "llamacpp"
    assert main(["compare", str(path), str(run_dir), "--json", str(tmp_path / "rows.json")]) == 0
    rows = {(r["scope"], r["figure"]): r for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert rows[("all", "accept_rate")]["verdict"] == EQUAL
    assert rows[("writing", "accept_rate")]["verdict"] == EQUAL and rows[("qa", "draft_n")]["verdict"] == EQUAL
    assert rows[("writing", "accept_rate")]["ours"] == pytest.approx(5 / 6)  # our per-category rate, same definition
    assert (rows[("writing", "turns")]["ours"], rows[("qa", "turns")]["ours"]) == (1, 1)  # our requests per category
    assert rows[("qa", "avg_latency")]["verdict"] == MEASURED
    assert rows[("all", "avg_pred_t_s")]["verdict"] == MISSING  # these records hold no predicted_per_second


def test_sglang_jsonl_last_line_is_the_run(tmp_path):
    path = tmp_path / "sglang.jsonl"
    lines = [{"backend": "sglang", "accept_length": 1.5, "output_throughput": 1.0, "completed": 3},
             {"backend": "sglang", "accept_length": 2.25, "output_throughput": 9.0, "completed": 4,
              "max_concurrency": 2, "mean_ttft_ms": 5.0}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert detect_tool(path) == "sglang"
    peer = PEERS["sglang"].read_result(path)
    assert peer["figures"]["accept_length"] == 2.25 and peer["meta"]["max_concurrency"] == 2 and peer["lines"] == 2


def test_aiperf_export_folder(tmp_path):
    export = {"schema_version": "1.1", "aiperf_version": "0.13.0",
              "spec_decode_acceptance_length": {"unit": "ratio", "avg": 2.5, "p50": 2.4, "count": 3},
              "spec_decode_token_weighted_acceptance_length": {"unit": "ratio", "avg": 2.6},
              "request_count": {"unit": "requests", "avg": 3.0}, "input_config": {"x": 1}}
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(export))
    assert detect_tool(tmp_path) == "aiperf"
    peer = PEERS["aiperf"].read_result(tmp_path)
    assert peer["figures"] == {"spec_decode_acceptance_length": 2.5, "spec_decode_token_weighted_acceptance_length": 2.6,
                               "request_count": 3.0}


def test_specdec_output_folder(tmp_path):
    (tmp_path / "specbench_results.json").write_text(json.dumps(
        {"Request_AL": {"a": 2.0, "b": 3.0}, "Category_AL": {"qa": 2.0, "writing": 3.0}, "Average_AL": 2.5,
         "Acceptance_Length_Histogram": {"1": 2}, "Conditional_Acceptance_Rate": {"1": 1.0}}))
    (tmp_path / "timing.json").write_text(json.dumps(
        [{"Output TPS": 1.0}, {"Output TPS": 12.5, "TTFT Time": {"min": "0.1", "mean": "0.1000", "quantiles": {}}}]))
    assert detect_tool(tmp_path) == "specdec"
    peer = PEERS["specdec"].read_result(tmp_path)
    assert peer["figures"] == {"Average_AL": 2.5, "Output TPS": 12.5, "TTFT Time.mean": 0.1}
    assert peer["per_category"] == {"qa": {"Category_AL": 2.0}, "writing": {"Category_AL": 3.0}}


def test_a_file_no_peer_wrote_is_named(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="x.json: not a result of"):
        detect_tool(path)
    with pytest.raises(ValueError, match="not a vllm bench serve result"):
        PEERS["vllm"].read_result(path)


def test_select_point_by_the_peers_concurrency():
    points = [{"run_point": "c1", "requested_concurrency": 1}, {"run_point": "c4", "requested_concurrency": 4}]
    assert select_point(points, {"max_concurrency": 4})["run_point"] == "c4"
    assert select_point(points, {}, "c1")["run_point"] == "c1"
    with pytest.raises(ValueError, match="pass --point"):
        select_point(points, {})
    with pytest.raises(ValueError, match="no load point 'c9'"):
        select_point(points, {}, "c9")


def test_compare_rows_without_a_view_value_say_why():
    rows = compare("aiperf", {"figures": {"spec_decode_acceptance_length": 2.0}},
                   {"figures": {}, "notes": ["aiperf 0.13 adapts vLLM's per-request statistics only"]}, {})
    assert rows[0].verdict == MISSING and "vLLM's per-request" in rows[0].cause


def test_aiperf_export_compared_on_the_run(run_dir, tmp_path):
    # aiperf over RUN: steps 2 + 2, accepted 5 + 1, drafted 6 + 6; request ALs 3.5 and 1.5
    export = {"aiperf_version": "0.13.0",
              "spec_decode_acceptance_length": {"unit": "ratio", "avg": 2.5},
              "spec_decode_token_weighted_acceptance_length": {"unit": "ratio", "avg": 2.5},
              "spec_decode_overall_draft_acceptance_rate": {"unit": "%", "avg": 50.0},
              "total_spec_decode_steps": {"unit": "count", "avg": 4}, "request_count": {"unit": "requests", "avg": 2},
              "total_osl": {"unit": "tokens", "avg": 12}}
    (tmp_path / "aiperf").mkdir()
    (tmp_path / "aiperf" / "profile_export_aiperf.json").write_text(json.dumps(export))
    assert main(["compare", str(tmp_path / "aiperf"), str(run_dir), "--json", str(tmp_path / "rows.json")]) == 0
    rows = {r["figure"]: r for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert all(r["verdict"] == EQUAL for r in rows.values()), rows
    assert rows["spec_decode_acceptance_length"]["ours_name"] == "acceptance_length_request_weighted"
    assert rows["spec_decode_acceptance_length"]["ours"] == pytest.approx(2.5)


def test_a_run_folder_compare_cannot_read_is_named(run_dir, tmp_path, capsys):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(vllm_result()))
    assert main(["compare", str(path), str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: not a run folder" in capsys.readouterr().err
    (run_dir / "manifest.json").write_text("{torn")
    assert main(["compare", str(path), str(run_dir)]) == 2
    assert f"{run_dir / 'manifest.json'}: not valid JSON" in capsys.readouterr().err
