"""vLLM's prefix-cache placeholder step: detected, left out of acceptance, counted on its own.

A warm-cache request (prompt cached but for its last token) gets one extra drafted step with K
placeholder drafts and 0 accepted, on the prefill's lone token. Expected figures are worked out by
hand below from the steps the request really drafted.
"""
from __future__ import annotations

import pytest

from speedbench.metrics.phases import per_step_accepted
from speedbench.metrics.acceptance.from_records import record_acceptance
from speedbench.metrics.acceptance.steps import placeholder_step, record_steps
from speedbench.records import EngineSpecStats, TurnRecord

K = 3


def _record(per_step: list[int], chunks: list[int], key: str = "c1/q/0") -> TurnRecord:
    histogram = [per_step.count(j) for j in range(K + 1)]
    spec = {"num_spec_tokens": K, "num_spec_steps": len(per_step), "num_draft_tokens": K * len(per_step),
            "num_accepted_draft_tokens": sum(per_step), "acceptance_histogram": histogram,
            "per_step_accepted": per_step}
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=len(per_step), draft_tokens=K * len(per_step),
                            accepted_tokens=sum(per_step), acceptance_histogram=histogram, draft_length=K, raw=spec,
                            drafted_steps=len(per_step))
    return TurnRecord(record_key=key, run_point="c1", load_shape="closed", requested_concurrency=1, request_rate=None,
                      question_id=key, category="coding", sub_category="", turn_index=0, num_turns=1, warmup=False,
                      worker=0, prompt_tokens=769, prompt_sha256="", scheduled_ns=0, send_ns=0,
                      end_ns=10 * len(chunks), started_unix_s=0.0, chunk_ns=[10 * i for i in range(len(chunks))],
                      chunk_tokens=chunks, chunks_are_steps=True, output_tokens=sum(chunks), engine_stats=stats,
                      finish_reason="stop")


# The same answer twice: 10 tokens = the prefill's 1, then steps accepting 3, 1, 2 drafts.
COLD = _record([3, 1, 2], [1, 4, 2, 3], "c1/cold/0")
WARM = _record([0, 3, 1, 2], [1, 4, 2, 3], "c1/warm/0")


def test_detected_only_on_the_warm_request():
    assert placeholder_step(WARM) and not placeholder_step(COLD)
    # merged chunks are not mistaken for it: the steps no longer line up with the chunks
    assert not placeholder_step(_record([0, 3, 1, 2], [1, 4, 5]))
    # a real first step that accepted nothing, then three more: as many steps as chunks after the prefill's
    assert not placeholder_step(_record([0, 3, 1, 2], [1, 1, 4, 2, 3]))
    # the last step may emit fewer tokens than it accepted (max_tokens cut it)
    assert placeholder_step(_record([0, 3, 1, 2], [1, 4, 2, 2]))


def test_removed_from_the_step_counts():
    warm = record_steps(WARM)
    # by hand: 3 drafted steps, 9 drafted tokens, 6 accepted, h = [0, 1, 1, 1], 3 decode steps
    assert (warm.drafted_steps, warm.drafted_tokens, warm.accepted_tokens, warm.decode_steps) == (3, 9, 6, 3)
    assert warm.acceptance_histogram == [0, 1, 1, 1] and warm.placeholder_steps == 1
    cold = record_steps(COLD)
    assert (cold.drafted_steps, cold.drafted_tokens, cold.decode_steps, cold.placeholder_steps) == (3, 9, 3, 0)


def test_warm_and_cold_report_the_same_acceptance():
    """AL = 1 + 6 / 3 = 3.0 for both (the raw counts of the warm one would give 1 + 6 / 4 = 2.5)."""
    for record in (COLD, WARM):
        acc = record_acceptance([record], K, num_resamples=0)
        assert acc.engine.acceptance_length == pytest.approx(3.0, rel=1e-12)
        assert acc.engine_coverage.num_drafted_steps == 3
    assert record_acceptance([WARM], K, 0).engine_coverage.num_placeholder_steps == 1
    # the chunks are the engine's steps once the placeholder is gone: nothing is called merged
    assert record_acceptance([WARM, COLD], K, 0).chunks.trim_report["num_merged_chunks"] == 0


def test_phase_detail_starts_after_the_placeholder():
    assert per_step_accepted(WARM) == [3, 1, 2] == per_step_accepted(COLD)


def test_counters_are_corrected_the_same_way():
    """vLLM's Prometheus counters count the placeholder too: over COLD + WARM they say 7 drafted steps,
    21 drafted tokens, 12 accepted. With the placeholder step the records identify, the counters source
    is corrected the same way (by hand: 6 steps, 18 tokens, AL 1 + 12 / 6 = 3.0, the engine's), keeps the
    uncorrected figures beside it, and no disagreement is flagged (7 vs 6 drafted steps was one)."""
    from speedbench.analysis.run_results import analyse_point

    entry = {"run_point": "c1", "complete": True,
             "delta": {"vllm:spec_decode_num_drafts_total": 7.0, "vllm:spec_decode_num_draft_tokens_total": 21.0,
                       "vllm:spec_decode_num_accepted_tokens_total": 12.0, "vllm:generation_tokens_total": 20.0},
             "delta_per_position": {"0": 6.0, "1": 4.0, "2": 2.0}}
    point = analyse_point("c1", [COLD, WARM], "vllm", entry, 0.02, 0, draft_length=K)
    counters = point.acceptance["counters"]
    assert (counters["num_drafted_steps"], counters["num_draft_tokens"], counters["num_accepted_tokens"]) == (6, 18, 12)
    assert counters["acceptance_length"] == pytest.approx(3.0, rel=1e-12)
    assert counters["num_prefix_cache_placeholder_steps"] == 1
    assert counters["uncorrected"]["num_drafted_steps"] == 7
    assert counters["uncorrected"]["acceptance_length"] == pytest.approx(1 + 12 / 7, rel=1e-12)
    assert point.acceptance["engine"]["acceptance_length"] == pytest.approx(3.0, rel=1e-12)
    assert not [f for f in point.flags if f.startswith("disagreement")], point.flags
    # the peer view stays what vLLM itself prints: its counters, placeholder included
    cold_only = analyse_point("c1", [COLD], "vllm", dict(entry, delta={
        "vllm:spec_decode_num_drafts_total": 3.0, "vllm:spec_decode_num_draft_tokens_total": 9.0,
        "vllm:spec_decode_num_accepted_tokens_total": 6.0, "vllm:generation_tokens_total": 10.0},
        delta_per_position={"0": 3.0, "1": 2.0, "2": 1.0}), 0.02, 0, draft_length=K)
    assert "num_prefix_cache_placeholder_steps" not in cold_only.acceptance["counters"]
