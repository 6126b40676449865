"""The load shape objects on their own (no engine, no tokenizer): what each starts, when, and how
many at once. The fake conversation only yields to the event loop; its "time" is arithmetic."""
from __future__ import annotations

import asyncio
import math
import random
import time

from speedbench.client.execution.phase import PhaseSpec
from speedbench.client.load.shapes import ClosedLoop, OpenLoop, load_shape_for, poisson_offsets_ns
from speedbench.client.data.workload import Conversation


def _conversations(count: int) -> list[Conversation]:
    return [Conversation(f"q{i}", "cat", "sub", [f"turn of q{i}"]) for i in range(count)]


class _Recorder:
    """A stand-in for running one conversation: records its start, stays in flight for a few
    event-loop turns, and "ends" ``duration_ns`` after its scheduled time."""

    def __init__(self, duration_ns: int = 10, hold_turns: int = 3):
        self.duration_ns, self.hold_turns = duration_ns, hold_turns
        self.started: list[tuple[str, int]] = []
        self.in_flight = self.max_in_flight = 0

    async def __call__(self, conversation: Conversation, scheduled_ns: int) -> int:
        self.started.append((conversation.question_id, scheduled_ns))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        for _ in range(self.hold_turns):
            await asyncio.sleep(0)  # a yield to the loop, not a wait on the clock
        self.in_flight -= 1
        return scheduled_ns + self.duration_ns


def _past_start() -> int:
    # A start already passed: the shapes then never wait on the clock.
    return time.perf_counter_ns() - 10**9


def test_closed_loop_keeps_concurrency_and_starts_everything_in_order():
    recorder, start = _Recorder(duration_ns=10), _past_start()
    asyncio.run(ClosedLoop(2).drive(_conversations(5), start, recorder, lambda: False))
    assert [qid for qid, _ in recorder.started] == ["q0", "q1", "q2", "q3", "q4"]
    assert recorder.max_in_flight == 2
    # Two slots alternate: each slot's first at the start, each later one at its previous end.
    assert sorted(t - start for _, t in recorder.started) == [0, 0, 10, 10, 20]


def test_closed_loop_takes_no_new_conversation_once_stopped():
    recorder = _Recorder()
    asyncio.run(ClosedLoop(2).drive(_conversations(5), _past_start(), recorder,
                                    lambda: len(recorder.started) >= 3))
    assert [qid for qid, _ in recorder.started] == ["q0", "q1", "q2"]


def test_closed_loop_of_zero_slots_still_runs_one():
    recorder = _Recorder()
    shape = ClosedLoop(0)
    asyncio.run(shape.drive(_conversations(3), _past_start(), recorder, lambda: False))
    assert recorder.max_in_flight == 1 and len(recorder.started) == 3
    assert shape.in_flight_limit == 0


def test_open_loop_starts_each_at_its_offset_without_a_limit():
    recorder, start = _Recorder(hold_turns=50), _past_start()
    offsets = [0, 5_000, 12_000, 12_001]
    asyncio.run(OpenLoop(offsets).drive(_conversations(4), start, recorder, lambda: False))
    assert recorder.started == [("q0", start), ("q1", start + 5_000), ("q2", start + 12_000),
                                ("q3", start + 12_001)]
    assert recorder.max_in_flight == 4  # all four overlap: nothing waits for a free slot
    assert OpenLoop(offsets).in_flight_limit == 0


def test_open_loop_without_offsets_starts_all_at_the_start_and_stops_when_told():
    recorder, start = _Recorder(), _past_start()
    asyncio.run(OpenLoop(None).drive(_conversations(3), start, recorder, lambda: False))
    assert recorder.started == [("q0", start), ("q1", start), ("q2", start)]
    # The stop (the error budget) is asked before each start: told after the first, one starts.
    answers, stopping = iter([False, True, True]), _Recorder()
    asyncio.run(OpenLoop([0, 1, 2]).drive(_conversations(3), start, stopping, lambda: next(answers)))
    assert [qid for qid, _ in stopping.started] == ["q0"]


def test_phase_picks_its_shape_and_poisson_arrivals_are_the_seeded_schedule():
    closed = PhaseSpec("c3", "closed", 3, None, False, 0, slots=3)
    assert load_shape_for(closed) == ClosedLoop(3) and load_shape_for(closed).in_flight_limit == 3
    offsets = poisson_offsets_ns(5, 2.0, seed=11)
    shape = load_shape_for(PhaseSpec("r2", "open", None, 2.0, False, 0, arrival_offsets_ns=offsets))
    # Independently: inverse-CDF exponential gaps, -ln(1 - U) / rate, from the same seeded uniforms.
    uniforms = random.Random(11)
    expected, now = [], 0.0
    for _ in range(5):
        expected.append(int(now * 1e9))
        now += -math.log(1.0 - uniforms.random()) / 2.0
    recorder, start = _Recorder(), _past_start()
    asyncio.run(shape.drive(_conversations(5), start, recorder, lambda: False))
    assert [t - start for _, t in recorder.started] == expected
