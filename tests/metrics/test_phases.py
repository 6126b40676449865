"""Thinking vs answer (speedbench.metrics.phases): hand-computed splits, acceptance and latency per phase."""
from __future__ import annotations

from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speedbench.metrics.phases import (
    ANSWER,
    THINKING,
    PhaseMarkers,
    answer_start,
    engine_step_positions,
    find_sequence,
    phase_results,
    split_record,
)
from speedbench.metrics.acceptance.from_records import chunk_table
from speedbench.metrics.acceptance.summary import summarize_acceptance
from speedbench.metrics.validation import MetricInputError
from speedbench.records import EngineSpecStats, TurnRecord

THINK_END = 99
MS = 1_000_000


def record(ids, chunks, times_ms=None, *, key="q0", category="math", stats=None, source="engine",
           finish="stop") -> TurnRecord:
    times_ms = times_ms if times_ms is not None else [100 + 10 * i for i in range(len(chunks))]
    return TurnRecord(
        record_key=f"c1/{key}/0", run_point="c1", load_shape="closed", requested_concurrency=1, request_rate=None,
        question_id=key, category=category, sub_category="", turn_index=0, num_turns=1, warmup=False, worker=0,
        prompt_tokens=5, prompt_sha256="", scheduled_ns=0, send_ns=0, end_ns=int(times_ms[-1] * MS) + 1,
        started_unix_s=0.0, chunk_ns=[int(t * MS) for t in times_ms], chunk_tokens=list(chunks),
        chunks_are_steps=True, output_tokens=len(ids), finish_reason=finish, engine_stats=stats,
        output_token_ids=list(ids), output_token_ids_source=source)


THINK = PhaseMarkers(boundary_ids=(THINK_END,), source="ids")


# ----------------------------------------------------------------------------------------------
# the split
# ----------------------------------------------------------------------------------------------

def test_boundary_inside_a_step_goes_to_thinking():
    # ids 5 | 6 7 8 | 9 </think> 10 | 11 12 | 13 ; </think> at index 5, so e = 6; the chunk at
    # offset 4 holds tokens 4..6: it spans the boundary and starts in thinking.
    ids = [5, 6, 7, 8, 9, THINK_END, 10, 11, 12, 13]
    split = split_record(ids, [1, 3, 3, 2, 1], THINK)
    assert split.answer_start == 6 and split.rule == "boundary"
    assert split.chunk_is_answer.tolist() == [False, False, False, True, True]
    assert split.spanning_chunk == 2


def test_step_starting_at_the_boundary_is_answer_and_nothing_spans():
    ids = [5, 6, THINK_END, 7, 8]
    split = split_record(ids, [1, 2, 2], THINK)  # offsets 0, 1, 3; e = 3
    assert split.chunk_is_answer.tolist() == [False, False, True]
    assert split.spanning_chunk is None


def test_boundary_split_across_chunks_harmony_marker():
    # <|channel|>final<|message|> = 200005, 17, 200008 in three chunks' worth of positions.
    harmony = PhaseMarkers(boundary_ids=(200005, 17, 200008), open_ids=(200005, 33, 200008))
    ids = [1, 2, 3, 200005, 17, 200008, 7, 8, 9]
    a = split_record(ids, [1, 2, 1, 2, 2, 1], harmony)  # offsets 0,1,3,4,6,8: the marker ends a chunk
    assert a.answer_start == 6
    assert a.chunk_is_answer.tolist() == [False, False, False, False, True, True]
    assert a.spanning_chunk is None
    b = split_record(ids, [1, 2, 2, 2, 1, 1], harmony)  # offsets 0,1,3,5,7,8: [200008, 7] spans
    assert b.chunk_is_answer.tolist() == [False, False, False, False, True, True]
    assert b.spanning_chunk == 3


def test_first_occurrence_counts():
    assert answer_start([THINK_END, 1, THINK_END, 2], THINK) == (1, "boundary")
    # partial matches before the real one; lists, numpy arrays and array('q') (the board's compact records)
    ids = [1, 2, 1, 2, 4, 1, 2, 3, 9]
    for form in (ids, np.asarray(ids), array("q", ids)):
        assert find_sequence(form, (1, 2, 3)) == 5
        assert find_sequence(form, (2, 3, 4)) is None
    assert find_sequence([1, 2], (1, 2, 3)) is None and find_sequence([1, 2], ()) is None


def test_no_boundary_rules():
    ids = [1, 2, 3, 4]
    assert answer_start(ids, THINK) == (0, "no_boundary")  # no thinking: all answer
    opened = PhaseMarkers(boundary_ids=(THINK_END,), open_ids=(98,))
    assert answer_start([98, 1, 2], opened) == (3, "open_no_boundary")  # opened, cut before closing
    assert answer_start(ids, opened) == (0, "no_boundary")
    prompt_open = PhaseMarkers(boundary_ids=(THINK_END,), prompt_state="open")
    assert answer_start(ids, prompt_open) == (4, "open_no_boundary")  # the prompt opened it: all thinking
    assert answer_start([1, THINK_END, 2], prompt_open) == (2, "boundary")


def test_boundary_in_the_prompt_means_all_answer():
    closed = PhaseMarkers(boundary_ids=(THINK_END,), prompt_state="closed")
    # The template closed thinking already; a stray </think> in the output does not split it.
    assert answer_start([1, THINK_END, 2], closed) == (0, "closed_in_prompt")
    split = split_record([1, THINK_END, 2], [1, 2], closed)
    assert split.chunk_is_answer.tolist() == [True, True]


def test_markers_are_validated():
    with pytest.raises(MetricInputError, match="boundary_ids"):
        PhaseMarkers(boundary_ids=())
    with pytest.raises(MetricInputError, match="prompt_state"):
        PhaseMarkers(boundary_ids=(1,), prompt_state="half")
    with pytest.raises(MetricInputError, match="3 ids for 4 chunk tokens"):
        split_record([1, 2, 3], [1, 3], THINK)


def test_engine_step_positions():
    # draft-model speculation, K = 3: a = 2, 0, 3, 1 -> steps emit 3, 1, 4, 2 after the prefill token
    assert engine_step_positions([2, 0, 3, 1], 11).tolist() == [1, 4, 5, 9]
    assert engine_step_positions([2, 0, 3, 1], 10).tolist() == [1, 4, 5, 9]  # 1 draft accepted past max_tokens
    assert engine_step_positions([2, 0, 3, 1], 9) is None  # more than the last step's drafts missing
    assert engine_step_positions([2, 0, 3], 11) is None  # n-gram: undrafted steps, no alignment


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=12), st.integers(0, 40))
def test_phases_partition_the_output(sizes, where):
    total = sum(sizes)
    ids = [1] * total
    if where < total:
        ids[where] = THINK_END
    split = split_record(ids, sizes, THINK)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    e = split.answer_start
    assert e == (where + 1 if where < total else 0)
    # a chunk is answer exactly when its first token is; at most one chunk holds both phases
    assert split.chunk_is_answer.tolist() == (offsets >= e).tolist()
    spanning = [i for i, (o, n) in enumerate(zip(offsets, sizes)) if o < e < o + n]
    assert spanning == ([] if split.spanning_chunk is None else [split.spanning_chunk])


# ----------------------------------------------------------------------------------------------
# figures per phase
# ----------------------------------------------------------------------------------------------

def test_acceptance_and_latency_per_phase_by_hand():
    ids = [5, 6, 7, 8, 9, THINK_END, 10, 11, 12, 13]
    r = record(ids, [1, 3, 3, 2, 1], times_ms=[100, 130, 170, 200, 260])
    out = phase_results([r], THINK, draft_length=3, num_resamples=0).to_dict()
    think, answer = out["phases"][THINKING], out["phases"][ANSWER]
    # The lone prefill chunk and the cut last chunk are trimmed from the whole stream: thinking
    # keeps steps 3, 3 (accepted 2, 2), answer keeps step 2 (accepted 1).
    assert think["chunks"]["acceptance_histogram"] == [0, 0, 2, 0]
    assert think["acceptance_length"] == pytest.approx(3.0)
    assert think["chunks"]["conditional_acceptance_rate"] == pytest.approx([1.0, 1.0, 0.0])
    assert answer["chunks"]["acceptance_histogram"] == [0, 1, 0, 0]
    assert answer["acceptance_length"] == pytest.approx(2.0)
    assert answer["chunks"]["marginal_acceptance_rate"] == pytest.approx([1.0, 0.0, 0.0])
    assert (think["num_tokens"], answer["num_tokens"]) == (6, 4)
    assert (think["num_step_tokens"], answer["num_step_tokens"]) == (7, 3)
    assert out["thinking_token_share"] == pytest.approx(0.6)
    # gaps 30, 40 ms belong to thinking (6 tokens), 30, 60 ms to the answer (3 tokens)
    assert think["duration_s"]["mean"] == pytest.approx(0.070)
    assert think["tokens_per_s"] == pytest.approx(6 / 0.070)
    assert think["inter_chunk_latency_s"]["max"] == pytest.approx(0.040)
    assert answer["duration_s"]["mean"] == pytest.approx(0.090)
    assert answer["tokens_per_s"] == pytest.approx(3 / 0.090)
    assert answer["inter_chunk_latency_s"]["count"] == 2
    assert out["time_to_answer_s"]["mean"] == pytest.approx(0.200)
    assert out["num_spanning_steps"] == 1 and out["source"] == "chunks" and out["rules"] == {"boundary": 1}


def test_no_boundary_answer_phase_equals_the_whole_record_table():
    rng = np.random.default_rng(3)
    records = []
    for i in range(6):
        sizes = [1] + rng.integers(1, 5, size=12).tolist() + [2]
        records.append(record(list(range(sum(sizes))), sizes, key=f"q{i}", category=("a", "b")[i % 2]))
    out = phase_results(records, THINK, draft_length=3, num_resamples=0).to_dict()
    whole = summarize_acceptance(chunk_table(records, 3), num_resamples=0).to_dict()  # the record path
    assert out["phases"][ANSWER]["chunks"]["acceptance_histogram"] == whole["acceptance_histogram"]
    assert out["phases"][ANSWER]["acceptance_length"] == pytest.approx(whole["acceptance_length"])
    assert out["phases"][THINKING]["chunks"] is None and out["phases"][THINKING]["num_tokens"] == 0
    assert out["rules"] == {"no_boundary": 6} and out["thinking_token_share"] == 0.0


def test_engine_detail_per_phase():
    # a = 2, 0, 3, 1 at token positions 1, 4, 5, 9; </think> at index 4 -> e = 5: steps 1, 2 are
    # thinking (h = [1, 0, 1, 0], AL 2.0), steps 3, 4 answer (h = [0, 1, 0, 1], AL 3.0).
    ids = [1, 2, 3, 4, THINK_END, 6, 7, 8, 9, 10, 11]
    stats = EngineSpecStats(source="vllm.metrics", draft_length=3, accepted_tokens=6, drafted_steps=4,
                            raw={"per_step_accepted": [2, 0, 3, 1], "per_step_drafted": [3, 3, 3, 3]})
    r = record(ids, [1, 3, 1, 4, 2], stats=stats)
    out = phase_results([r], THINK, draft_length=3, num_resamples=0).to_dict()
    assert out["source"] == "engine" and out["num_engine_detail"] == 1
    think, answer = out["phases"][THINKING], out["phases"][ANSWER]
    assert think["engine"]["acceptance_histogram"] == [1, 0, 1, 0]
    assert think["acceptance_length"] == pytest.approx(2.0) and think["source"] == "engine"
    assert answer["engine"]["acceptance_histogram"] == [0, 1, 0, 1]
    assert answer["acceptance_length"] == pytest.approx(3.0)
    # P(>= i) = 2/2, 1/2, 1/2 -> AR = 1, 1/2, 1
    assert answer["engine"]["marginal_acceptance_rate"] == pytest.approx([1.0, 0.5, 0.5])
    assert answer["engine"]["conditional_acceptance_rate"] == pytest.approx([1.0, 0.5, 1.0])
    # the chunks say the same where they are steps: thinking keeps [3, 1], answer keeps [4]
    assert think["chunks"]["acceptance_histogram"] == [1, 0, 1, 0]
    assert answer["chunks"]["acceptance_histogram"] == [0, 0, 0, 1]


def test_engine_detail_per_phase_with_variable_draft_length():
    # the same steps, drafting 3, 1, 3, 1: a = 2, 0, 3, 1. Answer (steps 3, 4): (3, 3), (1, 1):
    # position 1: 2 of 2; position 2: drafted and reached only by the step of 3 (accepted); position 3 too.
    # As if K = 3 were fixed, the step that drafted 1 would count as a rejection at position 2 (1/2).
    ids = [1, 2, 3, 4, THINK_END, 6, 7, 8, 9, 10, 11]
    stats = EngineSpecStats(source="vllm.metrics", draft_length=3, accepted_tokens=6, drafted_steps=4,
                            raw={"per_step_accepted": [2, 0, 3, 1], "per_step_drafted": [3, 1, 3, 1]})
    out = phase_results([record(ids, [1, 3, 1, 4, 2], stats=stats)], THINK, draft_length=3, num_resamples=0).to_dict()
    answer, think = out["phases"][ANSWER]["engine"], out["phases"][THINKING]["engine"]
    assert answer["conditional_acceptance_rate"] == pytest.approx([1.0, 1.0, 1.0])
    assert answer["draft_length_histogram"] == {"1": 1, "3": 1} and answer["variable_draft_length"] is True
    assert answer["mean_acceptance_rate"] == pytest.approx(4 / 4)
    # thinking (3, 2), (1, 0): position 1: 1 of 2; position 2: the step of 3 (accepted 2), 1 of 1; position 3: 0 of 1
    assert think["conditional_acceptance_rate"] == pytest.approx([0.5, 1.0, 0.0])


def test_engine_detail_not_used_when_steps_went_undrafted():
    # n-gram: 5 decode steps, only 4 drafted (a = 2, 0, 3, 2); the undrafted step's token and 1 draft
    # accepted past max_tokens make 1 + 4 + 7 - 11 = 1 <= a_S look aligned: the decode count says no.
    ids = [1, 2, 3, 4, THINK_END, 6, 7, 8, 9, 10, 11]
    stats = EngineSpecStats(source="vllm.metrics", draft_length=3, accepted_tokens=7, drafted_steps=4,
                            decode_steps=5, raw={"per_step_accepted": [2, 0, 3, 2]})
    out = phase_results([record(ids, [1, 3, 1, 1, 4, 1], stats=stats)], THINK, draft_length=3, num_resamples=0)
    assert out.num_engine_detail == 0 and out.source == "chunks"
    assert out.phases[ANSWER]["engine"] is None


def test_records_without_aligned_ids_are_counted_and_left_out():
    good = record([1, THINK_END, 2, 3], [1, 1, 2])
    reencoded = record([1, THINK_END, 2], [1, 1, 2], key="q1", source="reencoded")
    old = record([1, 2, 3, 4], [1, 1, 2], key="q2")
    old.output_token_ids = None
    out = phase_results([good, reencoded, old], THINK, draft_length=3, num_resamples=0)
    assert (out.num_records, out.num_split, out.num_unaligned, out.num_without_ids) == (3, 1, 1, 1)


def test_baseline_has_latency_but_no_acceptance():
    r = record([1, THINK_END, 2, 3], [1, 1, 1, 1], times_ms=[100, 110, 130, 160])
    out = phase_results([r], THINK, draft_length=0, num_resamples=0).to_dict()
    assert out["phases"][THINKING]["chunks"] is None and out["phases"][THINKING]["acceptance_length"] is None
    assert out["phases"][THINKING]["tokens_per_s"] == pytest.approx(1 / 0.010)
    assert out["phases"][ANSWER]["tokens_per_s"] == pytest.approx(2 / 0.050)
