"""The ``--ray`` pieces that need no cluster: clock estimates and their bounds, records moved onto
the driver's timeline, the driver's record sink, the work split shared with local workers."""
from __future__ import annotations

import json

import pytest

from speedbench.client.execution.phase import PhaseSpec
from speedbench.client.execution.ray_actor import shift_line
from speedbench.client.execution.ray_clock import ClockOffsetError, check_clock, estimate_clock
from speedbench.client.execution.processes import partition_phase, split_concurrency
from speedbench.client.data.workload import Conversation

MS = 1_000_000


def _probe(true_offset: int, true_shift: int, sent: int, out: int, back: int):
    """A probe whose request takes ``out`` ns and answer ``back`` ns, the driver's clocks at ``sent``
    (wall = mono + 10**18 on the driver); the worker's clocks relate by the true offset and shift."""
    t0, m0 = sent + 10**18, sent
    answered = sent + out
    wall, mono = answered + 10**18 + true_offset, answered - true_shift
    return (t0, m0, wall, mono, t0 + out + back, m0 + out + back)


def test_estimate_picks_the_shortest_round_trip_and_stays_within_its_bound():
    true_offset, true_shift = 37 * MS, -5 * 10**12
    probes = [_probe(true_offset, true_shift, 0, 4 * MS, 1 * MS),  # rtt 5 ms, asymmetric
              _probe(true_offset, true_shift, 10 * MS, 300_000, 700_000),  # rtt 1 ms: the best
              _probe(true_offset, true_shift, 20 * MS, 2 * MS, 2 * MS)]
    estimate = estimate_clock(probes)
    assert estimate.rtt_ns == 1 * MS and estimate.uncertainty_ns == 500_000 and estimate.probes == 3
    # By hand: offset = wall - (t0 + t1) / 2 = (sent + 0.3 ms + offset) - (sent + 0.5 ms) = offset - 0.2 ms
    assert estimate.offset_ns == true_offset - 200_000
    assert estimate.measured_shift_ns == true_shift + 200_000 and estimate.shift_ns == estimate.measured_shift_ns
    assert abs(estimate.offset_ns - true_offset) <= estimate.uncertainty_ns
    assert not estimate.same_host


def test_same_host_shift_is_exactly_zero():
    estimate = estimate_clock([_probe(0, 0, 0, 400_000, 600_000)], same_host=True)
    assert estimate.shift_ns == 0 and estimate.measured_shift_ns == 100_000 and estimate.same_host


def test_estimate_refuses_a_driver_clock_running_backwards():
    t0, m0, wall, mono, t1, m1 = _probe(0, 0, 5 * MS, MS, MS)
    with pytest.raises(ValueError, match="backwards"):
        estimate_clock([(t0, m0, wall, mono, t1, m0 - 1)])
    with pytest.raises(ValueError, match="no clock probes"):
        estimate_clock([])


def test_bounds_fail_with_the_worker_and_the_numbers():
    far = estimate_clock([_probe(250 * MS, 0, 0, MS, MS)])
    with pytest.raises(ClockOffsetError, match=r"worker 3 on nodeB: wall clock \+250\.0 ms \(\+-1\.0 ms\) .*bound of 100 ms.*NTP"):
        check_clock(far, "worker 3 on nodeB")
    slow = estimate_clock([_probe(0, 0, 0, 15 * MS, 15 * MS)])
    with pytest.raises(ClockOffsetError, match=r"unknown to within 15\.0 ms .*30\.0 ms.*bound of 10 ms"):
        check_clock(slow, "w")
    # 96 ms +- 1 ms is inside 100 ms; 100 ms +- 1 ms is not (the bound counts the uncertainty).
    check_clock(estimate_clock([_probe(96 * MS, 0, 0, MS, MS)]), "w")
    with pytest.raises(ClockOffsetError):
        check_clock(estimate_clock([_probe(100 * MS, 0, 0, MS, MS)]), "w")


def test_shift_line_moves_times_onto_the_driver_timeline():
    record = {"record_key": "c1/q/0", "warmup": False, "scheduled_ns": 100, "send_ns": 110, "end_ns": 190,
              "chunk_ns": [150, 170, 190], "started_unix_s": 1000.0, "output_text": "x"}
    line = json.dumps(record).encode()
    key, warmup, same = shift_line(line, 0, 0)
    assert (key, warmup, same) == ("c1/q/0", False, line)  # untouched bytes
    _, _, moved = shift_line(line, 1000, 250 * MS)
    data = json.loads(moved)
    assert (data["scheduled_ns"], data["send_ns"], data["end_ns"], data["chunk_ns"]) == (1100, 1110, 1190,
                                                                                           [1150, 1170, 1190])
    assert data["started_unix_s"] == pytest.approx(999.75) and data["output_text"] == "x"


def test_sink_writes_each_key_once(tmp_path):
    from speedbench.client.execution.ray_pool import _Sink

    path = tmp_path / "records.jsonl"
    sink = _Sink(str(path), {"c1/a/0": "done before"})
    assert sink.write([("c1/a/0", False, b'{"k":1}'), ("c1/b/0", False, b'{"k":2}'),
                       ("c1/warmup/c/0", True, b'{"k":3}')]) == 1  # measured records written
    assert sink.write([("c1/b/0", False, b'{"k":2}')]) == 0
    assert path.read_bytes() == b'{"k":2}\n{"k":3}\n' and sink.duplicates == 2


def _conversations(count: int) -> list[Conversation]:
    return [Conversation(f"q{i}", "qa", "s", ["hi"], [1, 2]) for i in range(count)]


def test_partition_deals_conversations_shares_and_offsets():
    conversations = _conversations(5)
    closed = PhaseSpec("c3", "closed", 3, None, False, 0)
    parts = partition_phase(closed, conversations, 2)
    assert [(w, p.slots, [c.question_id for c in mine]) for w, p, mine in parts] == [
        (0, 2, ["q0", "q2", "q4"]), (1, 1, ["q1", "q3"])]
    assert split_concurrency(3, 2) == [2, 1]
    one_slot = partition_phase(PhaseSpec("c1", "closed", 1, None, False, 0), conversations, 2)
    assert [(w, len(mine)) for w, _, mine in one_slot] == [(0, 5)]  # a worker with 0 slots gets nothing
    # A rerun splits the lost share's slots, not the point's concurrency (which the records keep).
    rerun = partition_phase(closed, conversations[:2], 2, concurrency=1)
    assert [(w, p.slots, p.requested_concurrency) for w, p, _ in rerun] == [(0, 1, 3)]
    open_phase = PhaseSpec("r2", "open", None, 2.0, False, 0, arrival_offsets_ns=[0, 10, 20, 30, 40])
    dealt = partition_phase(open_phase, conversations, 2)
    assert [p.arrival_offsets_ns for _, p, _ in dealt] == [[0, 20, 40], [10, 30]]


def test_ray_is_optional_and_its_absence_is_a_clear_error(monkeypatch):
    import subprocess
    import sys

    # Nothing but --ray imports ray: the client, its Ray modules and the CLI import without it.
    code = ("import sys; sys.modules['ray'] = None; import speedbench.cli.run, speedbench.client.run.runner, "
            "speedbench.client.execution.ray_pool, speedbench.client.execution.ray_cluster, speedbench.client.execution.ray_actor; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    from speedbench.client.execution.ray_cluster import RayClusterError, connect

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayClusterError, match=r"--ray needs Ray: pip install 'speed-bench\[ray\]'"):
        connect("auto")


def test_a_lost_open_loop_share_is_rerun_from_its_missing_conversations(tmp_path):
    from speedbench.client.execution.phase import ClientSettings
    from speedbench.client.execution.ray_pool import RayWorkerPool, _Actor
    from speedbench.records import TurnRecord

    conversations = _conversations(6)
    path = tmp_path / "records.jsonl"
    done = TurnRecord(record_key="r2/q1/0", run_point="r2", load_shape="open", requested_concurrency=None,
                      request_rate=2.0, question_id="q1", category="qa", sub_category="s", turn_index=0, num_turns=1,
                      warmup=False, worker=1, prompt_tokens=2, prompt_sha256="x", scheduled_ns=0, send_ns=0,
                      end_ns=1, started_unix_s=0.0, output_text="answer")
    path.write_text(json.dumps(done.to_dict()) + "\n")
    phase = PhaseSpec("r2", "open", None, 2.0, False, 0, arrival_offsets_ns=[0, 10, 20, 30, 40, 50])
    (_, lost_share, lost_mine), = [p for p in partition_phase(phase, conversations, 2) if p[0] == 1]
    assert [c.question_id for c in lost_mine] == ["q1", "q3", "q5"] and lost_share.arrival_offsets_ns == [10, 30, 50]
    pool = RayWorkerPool.__new__(RayWorkerPool)  # no cluster: only the bookkeeping
    estimate = estimate_clock([_probe(0, 0, 0, 1, 1)])
    pool.actors = [_Actor(0, None, {}, estimate, {}), _Actor(1, None, {}, estimate, {}, alive=False)]
    logged = []
    pool.log = logged.append
    settings = ClientSettings(engine="vllm", url="http://127.0.0.1:1", tokenizer="tok", records_path=str(path))
    again = pool._rerun_shares(settings, phase, {1: (lost_share, lost_mine, "ActorDiedError on h")})
    (rerun, mine), = again.values()
    assert list(again) == [0] and [c.question_id for c in mine] == ["q3", "q5"]
    assert rerun.arrival_offsets_ns == [0, 20] and rerun.done["r2/q1/0"] == "answer"
    assert logged == ["warning: Ray worker 1 lost (ActorDiedError on h); rerunning the 2 conversation(s) it had "
                      "not finished on the other workers"]
    pool.actors[0].alive = False
    with pytest.raises(Exception, match="every Ray worker was lost at r2"):
        pool._rerun_shares(settings, phase, {1: (lost_share, lost_mine, "gone")})
