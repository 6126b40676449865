"""results.json totals: a count the engine does not give is null, never 0 (llama.cpp's drafted steps);
how the earlier answers entered later turns, summed from the records, with a flag for mismatches."""
from __future__ import annotations

from speedbench.analysis.run_results import analyse_point
from speedbench.records import EngineSpecStats, TurnRecord


def _record(key: str, stats: EngineSpecStats) -> TurnRecord:
    chunks = [1, 4, 2, 3]
    return TurnRecord(record_key=key, run_point="c1", load_shape="closed", requested_concurrency=1, request_rate=None,
                      question_id=key, category="coding", sub_category="", turn_index=0, num_turns=1, warmup=False,
                      worker=0, prompt_tokens=10, prompt_sha256="", scheduled_ns=0, send_ns=1,
                      end_ns=40_000_000, started_unix_s=0.0, chunk_ns=[10_000_000 * (i + 1) for i in range(4)],
                      chunk_tokens=chunks, chunks_are_steps=True, output_tokens=10, engine_stats=stats,
                      finish_reason="stop")


def test_llamacpp_drafted_steps_are_unknown_not_zero():
    # llama.cpp's timings: 3 decode steps (verify_steps), 9 drafted and 6 accepted tokens; which steps drafted is not said
    llamacpp = EngineSpecStats(source="llamacpp.timings", verify_steps=3, draft_tokens=9, accepted_tokens=6)
    totals = analyse_point("c1", [_record("c1/a/0", llamacpp)], "llamacpp", None, 0.02, 0, draft_length=3).totals
    assert totals["engine_drafted_steps"] is None
    assert totals["engine_decode_steps"] == 3 and totals["engine_draft_tokens"] == 9


def test_vllm_drafted_steps_are_counted():
    vllm = EngineSpecStats(source="vllm.metrics", verify_steps=3, draft_tokens=9, accepted_tokens=6,
                           acceptance_histogram=[0, 1, 1, 1], draft_length=3, drafted_steps=3)
    totals = analyse_point("c1", [_record("c1/a/0", vllm)], "vllm", None, 0.02, 0, draft_length=3).totals
    assert totals["engine_drafted_steps"] == 3


def test_later_turn_answers_are_summed_and_mismatches_flagged():
    """Three turns of one row: turn 1 carried its answer as the engine's ids, turn 2 one answer as ids and
    one as text that is not the engine's (a mismatch): by hand, 2 later turns, 2 spliced, 1 as text, 1 mismatched."""
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=3, draft_tokens=9, accepted_tokens=6,
                            acceptance_histogram=[0, 1, 1, 1], draft_length=3, drafted_steps=3)
    records = []
    for turn, counts in enumerate([(None, None, None), (1, 0, 0), (1, 1, 1)]):
        record = _record(f"c1/a/{turn}", stats)
        record.turn_index, record.num_turns = turn, 3
        record.prompt_answers_spliced, record.prompt_answers_as_text, record.prompt_answers_mismatched = counts
        records.append(record)
    point = analyse_point("c1", records, "vllm", None, 0.02, 0, draft_length=3)
    assert {k: v for k, v in point.totals.items() if "later" in k} == {
        "later_turns": 2, "later_turn_answers_spliced": 2, "later_turn_answers_as_text": 1,
        "later_turn_answers_mismatched": 1}
    assert [f for f in point.flags if f.startswith("multi_turn_mismatch: 1 earlier answer(s) in 2 later-turn")]
    first_turns = analyse_point("c1", records[:1], "vllm", None, 0.02, 0, draft_length=3)
    assert first_turns.totals["later_turns"] is None and not any("multi_turn" in f for f in first_turns.flags)
