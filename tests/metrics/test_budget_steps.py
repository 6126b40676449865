"""llama.cpp's per-step draft lengths rebuilt from the stream (steps.budget_per_step_arrays): its draft
never runs past ``max_tokens``, so a step drafts ``min(K, tokens left - 1)``; the rebuilt counts are
used only when they add up to the engine's own ``draft_n`` / ``draft_n_accepted``.

Every expected figure is counted by hand in the comments.
"""
from __future__ import annotations

import pytest

from speedbench.metrics.acceptance.from_records import record_acceptance
from speedbench.metrics.acceptance.steps import budget_per_step_arrays
from speedbench.records import EngineSpecStats, TurnRecord

K = 4


def _record(chunks: list[int], draft_n: int, key: str = "a", finish: str = "length",
            source: str = "llamacpp.timings") -> TurnRecord:
    accepted = sum(t - 1 for t in chunks[1:])
    stats = EngineSpecStats(source=source, verify_steps=len(chunks) - 1, draft_tokens=draft_n,
                            accepted_tokens=accepted, raw={"draft_n": draft_n, "draft_n_accepted": accepted},
                            decode_steps=len(chunks) - 1, accepted_past_max_tokens=0)
    return TurnRecord(record_key=f"c1/{key}/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id=key, category="coding", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=20, prompt_sha256="", scheduled_ns=0,
                      send_ns=0, end_ns=10 * len(chunks), started_unix_s=0.0,
                      chunk_ns=[10 * i for i in range(len(chunks))], chunk_tokens=chunks, chunks_are_steps=True,
                      output_tokens=sum(chunks), engine_stats=stats, finish_reason=finish)


# max_tokens 16: the prefill's token, then steps emitting 5, 2, 5, 3 tokens.
# tokens left before each step: 15, 10, 8, 3 -> drafted min(4, left - 1): 4, 4, 4, 2 (14 in all)
# accepted t - 1: 4, 1, 4, 2
CUT = [1, 5, 2, 5, 3]


def test_drafts_rebuilt_from_the_budget():
    assert budget_per_step_arrays(_record(CUT, 14), K) == ([4, 4, 4, 2], [4, 1, 4, 2])


def test_not_rebuilt_when_the_totals_disagree_or_the_engine_is_not_budget_bound():
    assert budget_per_step_arrays(_record(CUT, 13), K) is None  # a draft ended early for another reason
    assert budget_per_step_arrays(_record(CUT, 14, source="vllm.metrics"), K) is None
    assert budget_per_step_arrays(_record(CUT, 14), None) is None
    # an EOS ending: no budget, every step drafted K = 4 (16 in all), so draft_n 14 says otherwise
    assert budget_per_step_arrays(_record(CUT, 16, finish="stop"), K) == ([4, 4, 4, 4], [4, 1, 4, 2])
    assert budget_per_step_arrays(_record(CUT, 14, finish="stop"), K) is None


def test_per_position_rates_over_the_steps_that_drafted_each_position():
    # two requests: CUT (drafted 4, 4, 4, 2; accepted 4, 1, 4, 2), and an EOS one drafting 4 per step:
    # chunks 1, 3, 5 -> accepted 2, 4
    records = [_record(CUT, 14, "a"), _record([1, 3, 5], 8, "b", finish="stop")]
    engine = record_acceptance(records, K, num_resamples=0).engine
    # per step (drafted, accepted): (4,4) (4,1) (4,4) (2,2) (4,2) (4,4)
    # D_i: drafted >= i                      -> 6, 6, 5, 5
    # R_i: drafted >= i and accepted >= i-1   -> 6, 6, 4, 3   (position 3: not (4,1), not the 2-draft)
    # A_i: accepted >= i                      -> 6, 5, 3, 3
    assert engine.conditional_acceptance_rate == pytest.approx([6 / 6, 5 / 6, 3 / 4, 3 / 3])
    assert engine.draft_length_histogram == {"2": 1, "4": 5}
    assert engine.variable_draft_length is True
    # AL = 1 + accepted / steps = 1 + 17 / 6, unchanged by the per-step counts
    assert engine.acceptance_length == pytest.approx(1 + 17 / 6)
    assert engine.per_position_null_reason is None


def test_rates_null_with_the_reason_when_one_request_does_not_add_up():
    records = [_record(CUT, 14, "a"), _record([1, 3, 5], 7, "b", finish="stop")]  # 7 < 8: p_min ended one early
    engine = record_acceptance(records, K, num_resamples=0).engine
    assert engine.conditional_acceptance_rate is None
    assert "not which steps drafted how many tokens" in engine.per_position_null_reason


def test_counters_with_no_draft_give_no_position_rates():
    """A server that drafted nothing (a schedule of K = 0 everywhere) has per-position counters of 0 over 0
    drafts: nothing is known of any position, so the rates are null with the reason, never 0.0."""
    from speedbench.metrics.acceptance.counters import acceptance_from_counters

    summary = acceptance_from_counters([0], [0], [0], [[0, 0, 0, 0]], draft_length=4)
    assert summary.conditional_acceptance_rate is None and summary.marginal_acceptance_rate is None
    assert "0 drafts" in summary.per_position_null_reason
    # one drafted step of 4 that accepted 2: the rates are there (1, 1, 0, 0 as marginals P(>= i))
    summary = acceptance_from_counters([1], [4], [2], [[1, 1, 0, 0]], draft_length=4)
    assert summary.marginal_acceptance_rate == pytest.approx([1.0, 1.0, 0.0, 0.0])
