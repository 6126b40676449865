"""Each peer's definitions on hand-built records, against values worked out by hand (in the comments)."""
from __future__ import annotations

import pytest

from speedbench.peers import aiperf_bench, llamacpp_bench, sglang_bench, specdec_bench, vllm_bench
from speedbench.peers.common import measured_requests, request_from_record
from speedbench.peers.view import peer_views
from tests.peers.records import record

approx = pytest.approx


def two_requests(**extra):
    # r1: sent at 0, chunks at 0.1 / 0.3 / 0.6 s with 1 / 2 / 3 tokens, stream ends at 0.7 s;
    # r2: sent at 1.0, chunks at 1.2 / 1.5 s with 1 / 1 tokens, stream ends at 1.6 s.
    return [record("q1", send=0.0, chunks=(0.1, 0.3, 0.6), tokens=(1, 2, 3), end=0.7, **extra),
            record("q2", send=1.0, chunks=(1.2, 1.5), tokens=(1, 1), end=1.6, **extra)]


# ------------------------------------------------------------------------------------------- vLLM

def test_vllm_spec_decode_figures_from_counter_deltas():
    # D = 10 drafts, T = 30 draft tokens, A = 18 accepted (8 / 6 / 4 at positions 0 / 1 / 2)
    figures = vllm_bench.spec_decode_figures(10, 30, 18, [8, 6, 4])
    assert figures["spec_decode_acceptance_length"] == approx(2.8)  # 1 + 18 / 10
    assert figures["spec_decode_acceptance_rate"] == approx(60.0)  # 100 * 18 / 30, a percentage
    assert figures["spec_decode_per_position_acceptance_rates"] == approx([0.8, 0.6, 0.4])  # marginals A_i / D
    assert vllm_bench.spec_decode_figures(0, 30, 0, [0, 0, 0])["spec_decode_acceptance_length"] == 0.0
    assert vllm_bench.spec_decode_figures(5, 0, 0) == {}  # nothing printed without draft tokens


def test_vllm_request_figures():
    figures = vllm_bench.request_figures(measured_requests(two_requests()))
    assert figures["completed"] == 2 and figures["total_output_tokens"] == 8
    assert figures["mean_ttft_ms"] == approx(150.0)  # (100 + 200) / 2
    # latency stops at the last chunk: 0.6 and 0.5 s; tpot = (0.6 - 0.1) / 5 = 0.1, (0.5 - 0.2) / 1 = 0.3
    assert figures["mean_tpot_ms"] == approx(200.0)
    assert figures["mean_itl_ms"] == approx(800.0 / 3)  # gaps 0.2, 0.3, 0.3
    assert figures["median_itl_ms"] == approx(300.0)
    assert figures["duration"] == approx(1.5)  # last chunk at 1.5 s - first send at 0
    assert figures["output_throughput"] == approx(8 / 1.5)
    assert figures["request_throughput"] == approx(2 / 1.5)


def test_vllm_view_uses_counters_and_first_turns_only():
    records = two_requests(accepted=3, drafted=6, steps=2, histogram=[0, 1, 1, 0])
    counters = {"run_point": "c1", "complete": True,
                "before": {"totals": {"vllm:spec_decode_num_drafts_total": 4.0,
                                      "vllm:spec_decode_num_draft_tokens_total": 12.0,
                                      "vllm:spec_decode_num_accepted_tokens_total": 6.0},
                           "per_position": {"vllm:spec_decode_num_accepted_tokens_per_pos_total": {"0": 3, "1": 2, "2": 1}}},
                "after": {"totals": {"vllm:spec_decode_num_drafts_total": 14.0,
                                     "vllm:spec_decode_num_draft_tokens_total": 42.0,
                                     "vllm:spec_decode_num_accepted_tokens_total": 24.0},
                          "per_position": {"vllm:spec_decode_num_accepted_tokens_per_pos_total": {"0": 11, "1": 8, "2": 5}}}}
    view = vllm_bench.view(measured_requests(records), "vllm", counters)
    assert view.basis == "counter deltas of the point"
    assert view.figures["spec_decode_acceptance_length"] == approx(2.8)  # 1 + 18 / 10
    assert view.figures["spec_decode_per_position_acceptance_rates"] == approx([0.8, 0.6, 0.4])
    # A later turn: vLLM would not have sent it, so the counters (which hold it) are not used.
    records.append(record("q2", turn=1, send=2.0, chunks=(2.1,), tokens=(4,), accepted=3, drafted=3, steps=1,
                          histogram=[0, 0, 0, 1]))
    view = vllm_bench.view(measured_requests(records), "vllm", counters)
    assert view.basis == "per-request engine statistics (first turns)"
    # first turns: 2 x (2 steps, 6 drafted, 3 accepted), each histogram [0, 1, 1, 0]
    assert view.figures["spec_decode_acceptance_length"] == approx(1 + 6 / 4)
    assert view.figures["spec_decode_acceptance_rate"] == approx(50.0)
    assert view.figures["spec_decode_per_position_acceptance_rates"] == approx([1.0, 0.5, 0.0])
    assert view.figures["completed"] == 2
    assert "spec_decode_acceptance_length" not in vllm_bench.view(measured_requests(records), "llamacpp").figures


# ----------------------------------------------------------------------------------------- SGLang

def test_sglang_figures():
    assert sglang_bench.server_accept_length(18, 10) == approx(2.8)  # (18 + 10) / 10
    assert sglang_bench.server_accept_length(0, 0) is None
    figures = sglang_bench.request_figures(measured_requests(two_requests()))
    # one itl entry per token: r1 0.2 / 2 twice, 0.3 / 3 three times; r2 0.3 once -> 0.8 / 6
    assert figures["mean_itl_ms"] == approx(800.0 / 6)
    # latency to the end of stream, 0.7 and 0.6 s: (0.7 - 0.1) / 5 = 0.12, (0.6 - 0.2) / 1 = 0.4
    assert figures["mean_tpot_ms"] == approx(260.0)
    assert figures["mean_e2e_latency_ms"] == approx(650.0)
    assert figures["output_throughput"] == approx(8 / 1.6)


# -------------------------------------------------------------------------------------- llama.cpp

def llamacpp_records():
    return [
        record("q1", "writing", send=0.0, chunks=(0.1, 0.5), tokens=(1, 5), end=0.7, accepted=6, drafted=10, steps=1,
               raw={"predicted_per_second": 100.0, "predicted_ms": 60.0, "prompt_n": 5, "prompt_ms": 1.0,
                    "prompt_per_second": 5000.0}),
        record("q2", "writing", 0, send=1.0, chunks=(1.1, 1.4), tokens=(1, 4), end=1.5, accepted=2, drafted=8, steps=1,
               raw={"predicted_per_second": 999.0, "predicted_ms": 50.0, "prompt_n": 5, "prompt_ms": 2.0}),
        record("q2", "writing", 1, send=2.0, chunks=(2.1, 2.6), tokens=(1, 2), end=2.8, accepted=4, drafted=4, steps=1,
               raw={"predicted_per_second": 999.0, "predicted_ms": 70.0, "prompt_n": 15, "prompt_ms": 3.0}),
        record("q3", "qa", send=3.0, chunks=(3.2,), tokens=(2,), end=4.0, accepted=0, drafted=0, steps=1,
               raw={"predicted_per_second": 50.0, "predicted_ms": 40.0, "prompt_n": 5, "prompt_ms": 1.0}),
    ]


def test_llamacpp_summary_rows_by_hand():
    view = llamacpp_bench.view(measured_requests(llamacpp_records()), "llamacpp")
    writing, qa = view.per_category["writing"], view.per_category["qa"]
    # q2 has two turns: 8 tokens over 50 + 70 ms -> 66.67 tokens/s; q1 keeps the server's 100
    assert writing["avg_pred_t_s"] == approx((100.0 + 8 / 0.12) / 2)
    assert writing["avg_latency"] == approx((0.7 + (0.5 + 0.8)) / 2)  # latency sums a sample's turns
    assert (writing["requests"], writing["turns"], writing["draft_n"], writing["accepted"]) == (2, 3, 22, 12)
    assert writing["accept_rate"] == approx(12 / 22)
    assert writing["avg_prompt_t_s"] == approx((5000.0 + 20 / 0.005) / 2)
    assert qa["accept_rate"] is None and qa["avg_pred_t_s"] == approx(50.0)  # nothing drafted: n/a
    overall = view.figures
    assert overall["accept_rate"] == approx(12 / 22) and overall["requests"] == 3 and overall["turns"] == 4
    assert overall["avg_pred_t_s"] == approx((100.0 + 8 / 0.12 + 50.0) / 3)


def test_llamacpp_failed_samples_and_compare():
    failed = [record("q9", "qa", send=5.0, error="boom")]
    view = llamacpp_bench.view(measured_requests(llamacpp_records()), "llamacpp",
                               failed=[request_from_record(r) for r in failed])
    assert view.per_category["qa"]["failed"] == 1 and view.figures["failed"] == 1
    base = [{"category": "writing", "avg_pred_t_s": 50.0, "avg_latency": 1.5},
            {"category": "overall", "avg_pred_t_s": 40.0, "avg_latency": 2.0}]
    spec = [{"category": "writing", "avg_pred_t_s": 100.0, "avg_latency": 0.75, "accept_rate": 0.5},
            {"category": "qa", "avg_pred_t_s": 10.0, "avg_latency": 1.0}]
    rows = llamacpp_bench.compare_rows(base, spec)
    assert [r["category"] for r in rows] == ["writing"]  # qa is not in the baseline
    assert rows[0]["decode_speedup"] == approx(2.0) and rows[0]["latency_speedup"] == approx(2.0)


# ------------------------------------------------------------------------------------------ aiperf

def test_aiperf_spec_decode_figures():
    # (accepted, drafted, steps): (6, 12, 4), (2, 9, 3), and a request without a verify step
    figures = aiperf_bench.spec_decode_figures([6, 2, 0], [12, 9, 0], [4, 3, 0])
    assert figures["spec_decode_acceptance_length"] == approx((2.5 + 5 / 3) / 2)  # request-weighted
    assert figures["spec_decode_token_weighted_acceptance_length"] == approx(1 + 8 / 7)
    assert figures["spec_decode_draft_acceptance_rate"] == approx((50.0 + 200 / 9) / 2)
    assert figures["spec_decode_overall_draft_acceptance_rate"] == approx(800 / 21)
    assert figures["spec_decode_accepted_per_verified"] == approx((10 / 16 + 5 / 12) / 2)
    assert (figures["total_spec_decode_steps"], figures["total_accepted_draft_tokens"],
            figures["total_draft_tokens"]) == (7, 8, 21)


def test_aiperf_request_figures_recount_tokens_from_text():
    requests = measured_requests(two_requests())
    figures = aiperf_bench.request_figures(requests, [6, 2])
    assert figures["inter_token_latency"] == approx(200.0)  # (0.6 - 0.1) / 5, (0.5 - 0.2) / 1
    assert figures["output_token_throughput_per_user"] == approx((10 + 1 / 0.3) / 2)
    assert figures["time_to_first_token"] == approx(150.0)
    recounted = aiperf_bench.view(requests, "vllm", count_tokens=lambda text: 11).figures
    assert recounted["total_osl"] == 22  # what the tokenizer says, not the engine


# ----------------------------------------------------------------------------------- specdec_bench

def test_specdec_step_sizes_and_average_al():
    assert specdec_bench.step_sizes([1, 3, 4, 2], stopped_at_eos=True) == [1, 3, 4, 1]  # EOS cut, nothing trimmed
    assert specdec_bench.step_sizes([4, 3, 1], stopped_at_eos=True) == [4, 3]
    assert specdec_bench.step_sizes([0, 2, 2], stopped_at_eos=False) == [2, 2]
    records = [record("q1", "coding", send=0, chunks=(0.1, 0.2, 0.3, 0.4), tokens=(1, 3, 4, 2), finish="stop"),
               record("q2", "math", 0, send=1, chunks=(1.1, 1.2), tokens=(1, 2)),
               record("q2", "math", 1, send=2, chunks=(2.1, 2.2, 2.3), tokens=(4, 3, 1), finish="stop")]
    view = specdec_bench.view(measured_requests(records), "vllm")
    # q1: [1, 3, 4, 1] -> 2.25; q2: [1, 2] + [4, 3] -> 2.5 (turns pooled in the request)
    assert view.figures["Average_AL"] == approx(2.375)
    assert view.per_category == {"coding": {"Category_AL": approx(2.25)}, "math": {"Category_AL": approx(2.5)}}
    # sizes 1, 3, 4, 1, 1, 2, 4, 3: P(>=2) = 5/8, P(>=3) = 4/8, P(>=4) = 2/8
    assert view.figures["Acceptance_Length_Histogram"] == {1: 3, 2: 1, 3: 2, 4: 2}
    assert view.figures["Conditional_Acceptance_Rate"] == approx({1: 1.0, 2: 0.625, 3: 0.8, 4: 0.5})


def test_specdec_conditional_rates_skip_sizes_that_never_occur():
    assert specdec_bench.conditional_rates({1: 2, 3: 2}) == approx({1: 1.0, 3: 0.5})


def test_specdec_timing_figures():
    requests = measured_requests([record("q1", send=0, chunks=(0.1, 0.3, 0.4), tokens=(1, 3, 2), finish="stop")])
    figures = specdec_bench.timing_figures(requests, [5])  # 1 + 3 + 2 tokens, EOS cut
    assert figures["E2E Request Time.mean"] == approx(0.4) and figures["TTFT Time.mean"] == approx(0.1)
    assert figures["Request Generation Step Time.mean"] == approx(0.4 / 3)  # gaps 0.1, 0.2, 0.1 (TTFT included)
    assert figures["Request Generation Tokens Per Second.mean"] == approx(4 / 0.3)
    assert figures["Output TPS"] == approx(5 / 0.4)


def test_peer_views_leave_out_warmup_and_failed_requests():
    records = two_requests(accepted=3, drafted=6, steps=2, histogram=[0, 1, 1, 0])
    records += [record("w", send=0, chunks=(0.1,), tokens=(9,), warmup=True, accepted=9, drafted=9, steps=3,
                       histogram=[0, 0, 0, 3]),
                record("bad", send=0, error="HTTP 500")]
    views = peer_views(records, "vllm")
    assert set(views) == {"vllm", "sglang", "llamacpp", "aiperf", "specdec"}
    assert views["vllm"]["figures"]["completed"] == 2
    assert views["aiperf"]["figures"]["total_spec_decode_steps"] == 4
    assert views["llamacpp"]["figures"]["failed"] == 1
