"""The step definitions (speedbench.metrics.acceptance.steps) and the detection of chunks that are not steps.

Expected values are worked out by hand in the comments.
"""
from __future__ import annotations

import pytest

from speedbench.metrics import MetricInputError
from speedbench.metrics.acceptance import requests_from_counts, requests_from_histograms, requests_from_step_sizes
from speedbench.metrics.acceptance.summary import summarize_acceptance
from speedbench.metrics.acceptance.steps import derive_decode_steps


@pytest.mark.parametrize("tokens,accepted,drafted,expected", [
    (48, 2, 8, (45, 0)),    # n-gram: 1 + 45 decode steps + 2 accepted = 48; 37 steps had no draft
    (48, 36, 12, (12, 1)),  # draft model: 12 steps x 3 accepted, the last cut at 3 tokens: 36 counted, 35 emitted
    (48, 38, 11, (11, 2)),  # K = 4: 1 + 11 + 38 = 50 counted, 48 emitted
    (400, 297, None, (102, 0)),  # llama.cpp timings: drafted steps unknown
    (1, 0, 0, (0, 0)),      # only the prefill's token
])
def test_decode_steps_from_the_identity(tokens, accepted, drafted, expected):
    assert derive_decode_steps(tokens, accepted, drafted) == expected


def test_a_chunk_after_a_stall_is_merged_though_not_larger_than_k_plus_one():
    # 10 ms steps, then a 330 ms stall and a 4-token chunk (K = 3, so 4 <= K + 1 passes the size test).
    sizes = [[1, 2, 1, 3, 1, 4, 2, 1]]
    times = [[0.0, 0.01, 0.02, 0.03, 0.04, 0.37, 0.38, 0.39]]
    table = requests_from_step_sizes(sizes, draft_length=3, chunk_times=times)
    report = table.trim_report
    assert (report.num_merged_chunks, report.num_stalled_chunks) == (1, 1)
    # kept steps: 2, 1, 3, 1, 2 (lone first chunk and the last dropped, the stalled 4 left out)
    assert table.steps.tolist() == [5] and table.accepted.tolist() == [1 + 0 + 2 + 0 + 1]
    # without the times the same chunk counts as one 4-token step
    plain = requests_from_step_sizes(sizes, draft_length=3)
    assert plain.trim_report.num_merged_chunks == 0 and plain.accepted.tolist() == [7]


def test_uniform_fast_chunks_have_no_stalls():
    # microsecond gaps jitter by factors without being stalls (the 10 ms floor)
    sizes = [[1, 2, 2, 2, 2, 2, 2]]
    times = [[0.0, 1e-6, 2e-6, 9e-6, 1e-5, 1.1e-5, 1.2e-5]]
    assert requests_from_step_sizes(sizes, draft_length=3, chunk_times=times).trim_report.num_merged_chunks == 0


def test_chunk_times_must_match_the_chunks():
    with pytest.raises(MetricInputError, match="chunk_times"):
        requests_from_step_sizes([[1, 2, 3]], draft_length=3, chunk_times=[[0.0, 1.0]])


def test_sglang_histograms_shorter_than_k_plus_one_are_padded_to_the_true_k():
    # request 1 never accepted more than one draft ([1, 1]), request 2 accepted 3 twice
    table = requests_from_histograms([[1, 1], [0, 0, 0, 2]], draft_length=3)
    assert table.draft_length == 3 and table.drafted.tolist() == [6, 6]  # 2 steps x K = 3 each
    summary = summarize_acceptance(table, num_resamples=0)
    assert summary.mean_acceptance_rate == pytest.approx((1 + 6) / 12)
    # K from the histograms alone would be 3 here only because request 2 happens to reach it
    alone = requests_from_histograms([[1, 1]])
    assert alone.draft_length == 1
    with pytest.raises(MetricInputError, match="more than K"):
        requests_from_histograms([[0, 0, 0, 0, 1]], draft_length=3)


def test_both_named_figures_from_engine_counts():
    # n-gram-like: 8 drafted steps of 45 decode steps, 2 accepted, 47 tokens after the prefill
    table = requests_from_counts([8], [2], [24], draft_length=3, decode_steps=[45], decode_tokens=[47])
    summary = summarize_acceptance(table, num_resamples=0)
    assert summary.step_kind == "drafted"
    assert summary.acceptance_length_drafted == pytest.approx(1.25)
    assert summary.tokens_per_decode_step == pytest.approx(47 / 45)
    assert (summary.num_drafted_steps, summary.num_decode_steps, summary.num_decode_tokens) == (8, 45, 47)
    # decode-step counts (llama.cpp): no drafted-step AL, tokens per decode step from the steps
    decode = summarize_acceptance(requests_from_counts([102], [297], [407], step_kind="decode"), num_resamples=0)
    assert decode.acceptance_length_drafted is None and decode.num_drafted_steps is None
    assert decode.tokens_per_decode_step is None  # no decode-token counts given


def test_chunk_figures_are_per_decode_step():
    table = requests_from_step_sizes([[1, 3, 2, 4, 1]], draft_length=3)  # kept: 3, 2, 4
    summary = summarize_acceptance(table, num_resamples=0)
    assert summary.step_kind == "decode" and summary.acceptance_length_drafted is None
    assert summary.tokens_per_decode_step == pytest.approx(9 / 3) == summary.acceptance_length


def _v1_record(source: str, verify_steps: int, accepted: int, output_tokens: int, histogram=None):
    """A record as format version 1 wrote it: no decode_steps / drafted_steps fields."""
    from speedbench.records import TurnRecord

    data = {"record_key": "c1/q/0", "run_point": "c1", "load_shape": "closed", "requested_concurrency": 1,
            "request_rate": None, "question_id": "q", "category": "writing", "sub_category": "", "turn_index": 0,
            "num_turns": 1, "warmup": False, "worker": 0, "prompt_tokens": 5, "prompt_sha256": "0" * 64,
            "scheduled_ns": 0, "send_ns": 0, "end_ns": 1, "started_unix_s": 0.0, "output_tokens": output_tokens,
            "engine_stats": {"source": source, "verify_steps": verify_steps, "accepted_tokens": accepted,
                             "draft_tokens": 3 * verify_steps, "acceptance_histogram": histogram, "exact": True,
                             "raw": {}}, "format_version": 1, "a_field_from_the_future": 1}
    return TurnRecord.from_dict(data)


def test_format_1_records_are_read_with_the_step_definitions():
    from speedbench.metrics.acceptance.steps import record_steps

    # vLLM wrote num_spec_steps (drafted steps) as verify_steps: 12 drafted, 36 accepted, 48 tokens
    steps = record_steps(_v1_record("vllm.metrics", 12, 36, 48, [0, 0, 0, 12]))
    assert (steps.drafted_steps, steps.decode_steps, steps.accepted_past_max_tokens) == (12, 12, 1)
    # llama.cpp wrote decode steps as verify_steps (tokens - accepted - 1)
    steps = record_steps(_v1_record("llamacpp.timings", 102, 297, 400))
    assert (steps.drafted_steps, steps.decode_steps) == (None, 102)


def test_standin_chunking_merges_steps_after_a_stall():
    from tests.standins.standin_sim import Simulation, chunk_groups

    sizes = [1, 2, 1, 3, 1, 2, 2]
    # every 3rd decode chunk arrives 0.3 s late holding 2 steps
    groups = chunk_groups(Simulation(stall_every=3, stall_steps=2, stall_s=0.3), sizes)
    assert groups == [([1], 0.0), ([2], 0.0), ([1], 0.0), ([3, 1], 0.3), ([2], 0.0), ([2], 0.0)]
    assert chunk_groups(Simulation(coalesce=2), sizes) == [([1], 0.0), ([2, 1], 0.0), ([3, 1], 0.0), ([2, 2], 0.0)]


def test_self_contradicting_engine_statistics_are_flagged_not_fatal():
    import dataclasses

    from speedbench.metrics.acceptance.from_records import record_acceptance

    record = _v1_record("vllm.metrics", 12, 36, 48, [0, 0, 0, 12])
    record = dataclasses.replace(record, engine_stats=dataclasses.replace(record.engine_stats, draft_length=2))
    acc = record_acceptance([record], 2, num_resamples=0, untrimmed=False)  # 4 bins but K = 2
    assert acc.engine is None and acc.flags[0].startswith("engine_stats_invalid")


def test_late_chunks_the_engine_vouches_for_are_steps():
    import dataclasses

    from speedbench.metrics.acceptance.from_records import chunk_table
    from speedbench.records import EngineSpecStats

    # 6 decode chunks, one 4-token chunk 330 ms late; the engine counted 6 decode steps and
    # 1 + 1 + 0 + 3 + 1 + 0 = 6 accepted: the late chunk is one step (a slow step, not a merge).
    sizes = [1, 2, 2, 1, 4, 2, 1]
    times = [0, 10, 20, 30, 360, 370, 380]
    record = _v1_record("vllm.metrics", 6, 6, sum(sizes))
    record = dataclasses.replace(record, chunk_tokens=sizes, chunk_ns=[t * 10 ** 6 for t in times],
                                 engine_stats=EngineSpecStats(source="vllm.metrics", decode_steps=6, drafted_steps=6,
                                                              accepted_tokens=6, draft_tokens=18))
    assert chunk_table([record], 3).trim_report.num_stalled_chunks == 0
    # without engine statistics the same stream is judged by its gaps
    assert chunk_table([dataclasses.replace(record, engine_stats=None)], 3).trim_report.num_stalled_chunks == 1
