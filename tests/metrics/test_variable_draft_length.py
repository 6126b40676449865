"""Per-step draft lengths (speedbench.metrics.acceptance.per_step), on hand-built steps and records.

Every expected figure is counted by hand in the comments from the (drafted, accepted) pairs.
"""
from __future__ import annotations

import numpy as np
import pytest

from speedbench.metrics.acceptance.from_records import record_acceptance
from speedbench.metrics.acceptance.per_step import (
    conditional_from_position_counts,
    draft_length_counts,
    draft_length_histogram,
    marginal_from_position_counts,
    per_position_unknown_reason,
    position_counts,
    variable_draft_length,
    vllm_position_rates,
)
from speedbench.records import EngineSpecStats, TurnRecord

K = 4
# (drafted, accepted) per step: a schedule that drafts 4 alone and 1 or 2 when batched
STEPS = [(4, 4), (4, 1), (1, 1), (1, 0), (2, 2)]


def test_position_counts_by_hand():
    d, a = zip(*STEPS)
    counts = position_counts(d, a, K)
    # D_i: drafted >= i          -> 5, 3, 2, 2
    # R_i: drafted >= i, a >= i-1 -> 5, 3 [(4,4),(4,1),(2,2)], 1 [(4,4)], 1
    # A_i: accepted >= i          -> 4, 2, 1, 1
    assert counts.tolist() == [[5, 3, 2, 2], [5, 3, 1, 1], [4, 2, 1, 1]]
    assert conditional_from_position_counts(counts) == pytest.approx([4 / 5, 2 / 3, 1.0, 1.0])
    assert marginal_from_position_counts(counts) == pytest.approx([4 / 5, 8 / 15, 8 / 15, 8 / 15])
    # vLLM: accepted at i over every drafted step (5)
    assert vllm_position_rates(counts, 5) == pytest.approx([4 / 5, 2 / 5, 1 / 5, 1 / 5])
    # AL = 1 + accepted / steps = 1 + 8 / 5, and sum_i A_i = 8 accepted
    assert counts[2].sum() == sum(a) == 8


def test_a_step_that_drafted_one_token_never_counts_against_position_2():
    d, a = zip(*STEPS)
    before = conditional_from_position_counts(position_counts(d, a, K))
    for extra in ((1, 1), (1, 0)):
        after = conditional_from_position_counts(position_counts(d + (extra[0],), a + (extra[1],), K))
        assert after[1:] == pytest.approx(before[1:])  # positions 2..4 untouched
        assert after[0] != pytest.approx(before[0])  # position 1 counts it
    # as if K were fixed (every step read as drafting 4), position 2 drops: h = [1, 2, 1, 0, 1]
    fixed = position_counts([K] * 5, a, K)
    assert conditional_from_position_counts(fixed)[1] == pytest.approx(2 / 4)


def test_fixed_k_reduces_to_the_histogram_formulas():
    from speedbench.metrics.acceptance.formulas import conditional_from_marginal, marginal_from_histogram

    accepted = [0, 3, 3, 1, 2, 3]
    counts = position_counts([3] * 6, accepted, 3)
    histogram = np.bincount(accepted, minlength=4)
    assert marginal_from_position_counts(counts) == pytest.approx(marginal_from_histogram(histogram))
    assert conditional_from_position_counts(counts) == pytest.approx(
        conditional_from_marginal(marginal_from_histogram(histogram)))
    assert vllm_position_rates(counts, 6) == pytest.approx(marginal_from_histogram(histogram))


def test_histogram_and_flag():
    counts = draft_length_counts([d for d, _ in STEPS], K)
    assert counts.tolist() == [0, 2, 1, 0, 2]
    assert draft_length_histogram(counts) == {"1": 2, "2": 1, "4": 2}
    assert variable_draft_length(counts)
    assert not variable_draft_length(draft_length_counts([4, 4, 4], K))
    assert not variable_draft_length(draft_length_counts([0, 4, 4], K))  # a step without a draft is no other K


def test_unknown_reason_only_when_fewer_than_steps_times_k():
    assert per_position_unknown_reason(20, 5, 4) is None
    assert "fewer than steps x K = 20" in per_position_unknown_reason(12, 5, 4)
    assert per_position_unknown_reason(None, 5, 4) is None


def test_bad_steps_refused():
    with pytest.raises(ValueError, match="accepted 3 of 2"):
        position_counts([2], [3], K)
    with pytest.raises(ValueError, match="more than K = 4"):
        position_counts([5], [1], K)


# -- records -----------------------------------------------------------------------------------

def _record(steps, key: str, *, per_step: bool = True, k: int = K) -> TurnRecord:
    drafted, accepted = [d for d, _ in steps], [a for _, a in steps]
    histogram = [accepted.count(j) for j in range(k + 1)]
    spec = {"num_spec_tokens": k, "num_spec_steps": len(steps), "num_draft_tokens": sum(drafted),
            "num_accepted_draft_tokens": sum(accepted), "acceptance_histogram": histogram,
            "per_step_accepted": accepted if per_step else None, "per_step_drafted": drafted if per_step else None}
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=len(steps), draft_tokens=sum(drafted),
                            accepted_tokens=sum(accepted), acceptance_histogram=histogram, draft_length=k, raw=spec,
                            drafted_steps=len(steps), decode_steps=len(steps), accepted_past_max_tokens=0)
    chunks = [1] + [1 + a for a in accepted]  # the prefill's token, then one chunk per step
    return TurnRecord(record_key=f"c4/{key}/0", run_point="c4", load_shape="closed", requested_concurrency=4,
                      request_rate=None, question_id=key, category="coding", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=20, prompt_sha256="", scheduled_ns=0,
                      send_ns=0, end_ns=10 * len(chunks), started_unix_s=0.0,
                      chunk_ns=[10 * i for i in range(len(chunks))], chunk_tokens=chunks, chunks_are_steps=True,
                      output_tokens=sum(chunks), engine_stats=stats, finish_reason="stop")


RECORDS = [_record(STEPS[:2], "a"), _record(STEPS[2:], "b")]


def test_engine_source_with_per_step_counts():
    engine = record_acceptance(RECORDS, K, num_resamples=0).engine
    assert engine.conditional_acceptance_rate == pytest.approx([4 / 5, 2 / 3, 1.0, 1.0])
    assert engine.marginal_acceptance_rate == pytest.approx([4 / 5, 8 / 15, 8 / 15, 8 / 15])
    assert engine.acceptance_length == pytest.approx(1 + 8 / 5)
    assert engine.num_draft_tokens == 12 and engine.mean_acceptance_rate == pytest.approx(8 / 12)
    assert engine.draft_length_histogram == {"1": 2, "2": 1, "4": 2} and engine.variable_draft_length is True
    assert (engine.position_drafted_steps, engine.position_reached_steps, engine.position_accepted_steps) == (
        [5, 3, 2, 2], [5, 3, 1, 1], [4, 2, 1, 1])
    assert engine.per_position_null_reason is None and engine.checks_failed == []
    # per category too, from the same counts
    assert engine.per_category["coding"]["draft_length_histogram"] == {"1": 2, "2": 1, "4": 2}


def test_chunk_source_does_not_claim_steps_times_k():
    result = record_acceptance(RECORDS, K, num_resamples=0)
    chunks = result.chunks
    # the chunks still give AL: 5 steps of 1 + accepted tokens (untrimmed: the last chunk kept)
    assert result.chunks_untrimmed.acceptance_length == pytest.approx(1 + 8 / 5)
    assert chunks.num_draft_tokens is None and chunks.mean_acceptance_rate is None
    assert chunks.conditional_acceptance_rate is None and chunks.marginal_acceptance_rate is None
    assert "do not say what each step drafted" in chunks.per_position_null_reason
    assert chunks.drafted_tokens_null_reason and chunks.variable_draft_length is True
    assert result.chunks_untrimmed.num_draft_tokens is None


def test_without_per_step_counts_the_rates_are_null_with_the_reason():
    records = [_record(STEPS[:2], "a", per_step=False), _record(STEPS[2:], "b", per_step=False)]
    engine = record_acceptance(records, K, num_resamples=0).engine
    assert engine.conditional_acceptance_rate is None and engine.marginal_acceptance_rate is None
    assert engine.per_position_null_reason.startswith("draft length varied (12 drafted tokens over 5 steps")
    assert engine.variable_draft_length is True and engine.draft_length_histogram is None
    assert engine.acceptance_length == pytest.approx(1 + 8 / 5)  # AL unchanged
    assert engine.mean_acceptance_rate == pytest.approx(8 / 12)


def test_fixed_k_without_per_step_counts_keeps_the_histogram_rates():
    steps = [(4, 4), (4, 1), (4, 0)]
    engine = record_acceptance([_record(steps, "a", per_step=False)], K, num_resamples=0).engine
    # h = [1, 1, 0, 0, 1]: P(>=1) = 2/3, P(>=2..4) = 1/3
    assert engine.marginal_acceptance_rate == pytest.approx([2 / 3, 1 / 3, 1 / 3, 1 / 3])
    assert engine.draft_length_histogram == {"4": 3} and engine.variable_draft_length is False
    assert engine.per_position_null_reason is None
    result = record_acceptance([_record(steps, "a")], K, num_resamples=0)
    untrimmed = result.chunks_untrimmed  # every step's chunk kept: 3 steps x K = 12 drafted, as the engine counted
    assert result.engine.variable_draft_length is False and untrimmed.num_draft_tokens == 12
    assert untrimmed.conditional_acceptance_rate == pytest.approx(result.engine.conditional_acceptance_rate)


def test_a_position_no_step_drafted_is_unknown_not_zero():
    # every step drafted 1 (a schedule at a large batch): positions 2..4 were never drafted
    counts = position_counts([1, 1, 1], [1, 0, 1], K)
    rates = conditional_from_position_counts(counts)
    assert rates[0] == pytest.approx(2 / 3) and np.isnan(rates[1:]).all()
    # drafted but never reached (the one step of 4 rejected position 1): 0, as for a fixed K
    assert conditional_from_position_counts(position_counts([4, 1], [0, 1], K)).tolist() == [0.5, 0.0, 0.0, 0.0]
    engine = record_acceptance([_record([(1, 1), (1, 0), (1, 1)], "a")], K, num_resamples=200).engine.to_dict()
    assert engine["conditional_acceptance_rate"][0] == pytest.approx(2 / 3)
    assert engine["conditional_acceptance_rate"][1:] == [None, None, None]  # null in results.json
    assert engine["conditional_acceptance_rate_ci"][1] == [None, None]
    assert engine["draft_length_histogram"] == {"1": 3} and engine["variable_draft_length"] is False


def test_declared_variable_k_without_per_step_counts():
    """SGLang's speculative_adaptive: its proposed drafts are verify steps x the configured draft tokens,
    so its totals cannot show K varying; the server's description says so, and no rate is computed."""
    from speedbench.metrics.acceptance.draft_length import declared_variable_draft_length

    reason = declared_variable_draft_length({"speculative_adaptive": True}, None)
    assert "speculative_adaptive" in reason
    assert declared_variable_draft_length({"speculative_adaptive": False}, {"speculation": "draft"}) is None
    assert "1-1:4" in declared_variable_draft_length(None, {"draft_schedule": "1-1:4,2-64:1"})
    assert declared_variable_draft_length(None, {"draft_p_min": 0.0}) is None
    assert "0.9" in declared_variable_draft_length(None, {"draft_p_min": 0.9})
    records = [_record([(4, 4), (4, 1), (4, 0)], "a", per_step=False)]  # totals say K = 4 on every step
    result = record_acceptance(records, K, num_resamples=0, variable=reason)
    assert result.engine.conditional_acceptance_rate is None and "speculative_adaptive" in \
        result.engine.per_position_null_reason
    assert result.engine.variable_draft_length is True and result.chunks.num_draft_tokens is None
    # per-step counts decide when the engine sent them: one K here, so nothing is unknown
    result = record_acceptance([_record([(4, 4), (4, 1), (4, 0)], "a")], K, num_resamples=0, variable=reason)
    assert result.engine.variable_draft_length is False and result.chunks_untrimmed.num_draft_tokens == 12


def test_consistency_rule_per_step_counts():
    """drafted <= steps x K holds with K varying; per-step arrays must add up to the engine's totals."""
    from dataclasses import replace

    from speedbench.analysis.consistency import check_record

    def stats_rules(record):  # the hand-built times (10 ns per chunk) break bounds.*, not the point here
        return [v for v in check_record(record, K) if v.rule.startswith("stats.")]

    good = _record(STEPS, "a")
    assert stats_rules(good) == []
    raw = dict(good.engine_stats.raw, per_step_drafted=[4, 3, 1, 1, 2])  # 11 drafted, the engine counted 12
    bad = replace(good, engine_stats=replace(good.engine_stats, raw=raw))
    assert [(v.rule, v.detail) for v in stats_rules(bad)] == [
        ("stats.per_step_counts", "per-step counts hold 11 drafted tokens, the engine counted 12")]
    raw = dict(good.engine_stats.raw, per_step_drafted=[4, 4, 1, 1, 1], per_step_accepted=[4, 1, 1, 0, 2])
    bad = replace(good, engine_stats=replace(good.engine_stats, raw=raw))
    assert "step 4 drafted 1 and accepted 2" in stats_rules(bad)[0].detail
