"""The degenerate-speculation guard on hand-built records: loops, pinned steps, a normal run (no flag).

Every expected share is counted by hand from the records built here."""
from __future__ import annotations

from speedbench.metrics.degenerate import degenerate_guard, loop_period, pinned
from speedbench.analysis.run_results import analyse_point
from speedbench.records import EngineSpecStats, TurnRecord

K = 3


def _record(key: str, per_step: list[int], ids: list[int] | None = None, category: str = "coding") -> TurnRecord:
    """A vLLM-like request: one drafted step per entry of ``per_step`` (drafts accepted there), K drafted each."""
    accepted = sum(per_step)
    histogram = [per_step.count(j) for j in range(K + 1)]
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=len(per_step), draft_tokens=K * len(per_step),
                            accepted_tokens=accepted, acceptance_histogram=histogram, draft_length=K,
                            drafted_steps=len(per_step))
    chunks = [1] + [1 + a for a in per_step]
    total = sum(chunks)
    ids = ids if ids is not None else [(7 * i + 3) % 101 for i in range(total)]  # no cycle of period <= 4
    return TurnRecord(record_key=key, run_point="c1", load_shape="closed", requested_concurrency=1, request_rate=None,
                      question_id=key, category=category, sub_category="", turn_index=0, num_turns=1, warmup=False,
                      worker=0, prompt_tokens=10, prompt_sha256="", scheduled_ns=0, send_ns=1,
                      end_ns=10_000_000 * (len(chunks) + 1), started_unix_s=0.0,
                      chunk_ns=[10_000_000 * (i + 1) for i in range(len(chunks))], chunk_tokens=chunks,
                      chunks_are_steps=True, output_tokens=total, engine_stats=stats, finish_reason="stop",
                      output_token_ids=ids[:total] + [0] * max(0, total - len(ids)), output_token_ids_source="engine")


MIXED = [2, 1, 3, 0, 2, 1, 1, 2, 0, 3]  # 10 steps, 15 of 30 drafts accepted: 26 output tokens


def test_loop_period_by_hand():
    assert loop_period([5, 9] * 20) == 2
    assert loop_period(list(range(100, 140)) + [1, 2, 3] * 11) == 3  # the last 32 tokens: period 3
    assert loop_period([4] * 32) == 1
    assert loop_period(list(range(40))) is None
    assert loop_period([1, 2, 3, 4, 5] * 10) is None  # period 5 > 4
    assert loop_period([5, 9] * 15) is None  # 30 tokens < the 32 judged
    loop_then_break = [5, 9] * 20 + [6]
    assert loop_period(loop_then_break) is None


def test_pinned_by_hand():
    assert pinned(30, 30, 10) == "all"
    assert pinned(30, 0, 10) == "none"
    assert pinned(30, 15, 10) is None
    assert pinned(12, 12, 4) is None  # too few steps to judge
    assert pinned(None, 3, 10) is None


def test_normal_point_is_not_flagged():
    records = [_record(f"c1/q{i}/0", MIXED + MIXED) for i in range(5)]  # 51 tokens each: judged for loops
    point = analyse_point("c1", records, "vllm", None, 0.02, 0, draft_length=K)
    kinds = {flag.split(":")[0] for flag in point.flags}
    assert not kinds & {"acceptance_pinned", "degenerate_output"}, point.flags
    overall = point.degenerate["overall"]
    assert (overall["pin_judged"], overall["pinned_all"], overall["pinned_none"]) == (5, 0, 0)
    assert (overall["loop_judged"], overall["looping"]) == (5, 0)


def test_pinned_steps_flag_the_point_and_name_the_category():
    """2 of 5 requests pinned (one all-accepted, one none): 40% > 20%. By category: math 2 of 2, coding 0 of 3."""
    records = [_record(f"c1/q{i}/0", MIXED) for i in range(3)]
    records.append(_record("c1/all/0", [K] * 10, category="math"))
    records.append(_record("c1/none/0", [0] * 10, category="math"))
    guard = degenerate_guard(records)
    assert (guard.overall.pinned_all, guard.overall.pinned_none, guard.overall.pin_judged) == (1, 1, 5)
    assert guard.categories["math"].pinned_share == 1.0 and guard.categories["coding"].pinned_share == 0.0
    [flag] = [f for f in guard.flags if f.startswith("acceptance_pinned")]
    assert "2 of 5" in flag and "math 100%" in flag and "coding" not in flag
    assert "expected" not in flag
    [synthetic_flag] = degenerate_guard(records, synthetic=True).flags
    assert "expected: this run's acceptance is synthetic" in synthetic_flag


def test_one_pinned_request_of_ten_is_below_the_share():
    records = [_record(f"c1/q{i}/0", MIXED) for i in range(9)] + [_record("c1/all/0", [K] * 10)]
    assert degenerate_guard(records).flags == []  # 10% <= 20%


def test_short_requests_are_not_judged():
    records = [_record("c1/short/0", [K] * 3)]  # 3 drafted steps < 8; 13 ids < 32
    guard = degenerate_guard(records)
    assert guard.overall.pin_judged == 0 and guard.overall.loop_judged == 0 and guard.flags == []


def test_looping_outputs_flag_the_point():
    """2 of 5 outputs (51 tokens each) end in a two-token loop: 40% > 20%."""
    long_steps = MIXED + MIXED  # 20 steps, 51 tokens
    records = [_record(f"c1/q{i}/0", long_steps) for i in range(3)]
    records += [_record(f"c1/loop{i}/0", long_steps, ids=list(range(11)) + [8, 9] * 20, category="writing")
                for i in range(2)]
    point = analyse_point("c1", records, "vllm", None, 0.02, 0, draft_length=K)
    [flag] = [f for f in point.flags if f.startswith("degenerate_output")]
    assert "2 of 5" in flag and "writing 100%" in flag
    assert point.degenerate["categories"]["writing"]["looping"] == 2
    assert point.degenerate["overall"]["looping_share"] == 0.4
