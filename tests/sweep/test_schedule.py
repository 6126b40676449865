"""The best K per batch size as a schedule: the pure derivation, and ``speedbench schedule`` on a hand-made
sweep folder; every expected value worked out by hand in the comments."""
from __future__ import annotations

import json

import pytest

from speedbench.cli import main
from speedbench.sweep.schedule import Measured, ScheduleDerivationError, derive_schedule

# Output tokens/s per repeat, by concurrency and K (0: the baseline "ar").
TPS = {
    # c=1: medians 10, 15, 20; MADs 0, 1, 1. K=2 leads; K=1 is 5 below > 1 + 1: K = 2.
    1: {0: [10, 10, 10], 1: [14, 15, 16], 2: [19, 20, 21]},
    # c=2: medians 30, 36, 37; MADs 0, 1, 3. K=2 leads by 1 <= 3 + 1 over K=1: tied, the smaller K = 1.
    #      the baseline is 7 below > 3 + 0: not tied.
    2: {0: [30, 30, 30], 1: [35, 36, 37], 2: [34, 37, 40]},
    # c=4: medians 52, 46, 41: the baseline is fastest: K = 0.
    4: {0: [50, 52, 54], 1: [45, 46, 47], 2: [40, 41, 42]},
}


def _table():
    return [Measured(c, k, tuple(float(v) for v in values)) for c, by_k in TPS.items() for k, values in by_k.items()]


def test_best_k_per_concurrency_ties_within_the_spread_take_the_smaller_k():
    derived = derive_schedule(_table())
    assert [(c.concurrency, c.k, c.leader_k, c.tied) for c in derived.choices] == [
        (1, 2, 2, (2,)), (2, 1, 2, (1, 2)), (4, 0, 0, (0,))]
    assert derived.choices[1].median_output_tps == 36.0
    # batch sizes 2-3 keep c=2's K; the largest measured concurrency ends the schedule by default
    assert derived.schedule.text == "1-1:2,2-3:1,4-4:0"
    assert derive_schedule(_table(), max_batch=64).schedule.text == "1-1:2,2-3:1,4-64:0"


def test_ranges_between_measured_concurrencies_and_merging():
    # measured at 2, 8 and 32 (one repeat each: only exact ties count)
    table = [Measured(2, 0, (5.0,)), Measured(2, 3, (9.0,)), Measured(8, 0, (20.0,)), Measured(8, 3, (21.0,)),
             Measured(32, 0, (40.0,)), Measured(32, 3, (40.0,))]
    derived = derive_schedule(table, max_batch=128)
    # 1-7 take c=2's K 3 (below the smallest measured: its K), 8-31 c=8's K 3 (merged: 1-31:3);
    # c=32 is an exact tie between K 0 and 3: K 0 up to 128
    assert derived.schedule.text == "1-31:3,32-128:0"
    with pytest.raises(ScheduleDerivationError, match="max batch 16 is below the largest measured concurrency 32"):
        derive_schedule(table, max_batch=16)
    with pytest.raises(ScheduleDerivationError, match="no speculative variant"):
        derive_schedule([Measured(1, 0, (1.0,))])


def _run(root, name, info, tps_by_c):
    folder = root / "runs" / name
    folder.mkdir(parents=True)
    (folder / "engine.json").write_text(json.dumps(info))
    points = [{"run_point": f"c{c}", "requested_concurrency": c,
               "latency": {"output_tps": tps, "user_tps": {"mean": tps / c}}} for c, tps in tps_by_c.items()]
    (folder / "results.json").write_text(json.dumps({"points": points}))


def _sweep(tmp_path):
    """A sweep folder as `speedbench sweep` leaves it: family "draft-k{k}" (K 1, 2), baseline "ar", 3 repeats
    on workload "tp", and a schedule variant's runs whose (huge) figures must not count."""
    root = tmp_path / "sweep"
    for repeat in (1, 2, 3):
        for k in (0, 1, 2):
            variant = "ar" if k == 0 else f"draft-k{k}"
            info = {"variant": variant, "family": variant if k == 0 else "draft-k{k}", "workload": "tp",
                    "repeat": repeat, "speculation": "none" if k == 0 else "draft_model", "draft_length": k,
                    "baseline": None if k == 0 else "ar", "drafter": None if k == 0 else "q4"}
            _run(root, f"{variant}.tp.r{repeat}", info, {c: TPS[c][k][repeat - 1] for c in TPS})
        _run(root, f"sched.tp.r{repeat}", {"variant": "sched", "family": "sched", "workload": "tp", "repeat": repeat,
                                           "speculation": "draft_model", "draft_length": 2, "baseline": "ar",
                                           "schedule": "draft-k{k}"}, {c: 1000.0 for c in TPS})
    return root


def test_schedule_command_on_a_hand_made_sweep(tmp_path, capsys):
    root = _sweep(tmp_path)
    assert main(["schedule", str(root), "--engine", "vllm", "--max-batch", "64", "--out",
                 str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "schedule: 1-1:2,2-3:1,4-64:0" in out
    assert "c=2: K=1 (36.00 tokens/s, 3 repeats; K=2 has the highest median; K in [1, 2]" in out
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["form"] == {"num_speculative_tokens": 2,
                               "num_speculative_tokens_per_batch_size": [[1, 1, 2], [2, 3, 1], [4, 64, 0]]}
    assert written["family"] == "draft-k{k}" and written["workload"] == "tp"
    assert main(["schedule", str(root), "--engine", "trtllm"]) == 0
    # thresholds: >= 1 drafts 2, >= 2 drafts 1, >= 4 none (JSON writes the keys as strings)
    assert 'trtllm: {"draft_len_schedule": {"1": 2, "2": 1, "4": 0}, "max_draft_len": 2}' in capsys.readouterr().out


def test_schedule_command_names_what_is_missing(tmp_path, capsys):
    assert main(["schedule", str(tmp_path), "--engine", "vllm"]) == 1
    assert "no runs/ folder" in capsys.readouterr().err
    root = _sweep(tmp_path)
    assert main(["schedule", str(root), "--engine", "vllm", "--family", "eagle"]) == 1
    assert "no draft family 'eagle' in this sweep; draft families: draft-k{k}" in capsys.readouterr().err
    assert main(["schedule", str(root), "--engine", "vllm", "--workload", "qual"]) == 1
    assert "no workload 'qual' in this sweep; workloads: tp" in capsys.readouterr().err


def test_a_schedule_variant_command_is_filled_from_the_family_runs(tmp_path):
    from speedbench.sweep.plan import load_plan
    from speedbench.sweep.schedule_substitution import fill_schedule
    from tests.sweep.conftest import write_plan

    root = _sweep(tmp_path)
    serve = "python3 -c pass {port}"
    plan = load_plan(write_plan(tmp_path, f"""
tokenizer = "tok"
dataset = "ds"
[[workload]]
name = "tp"
config = "throughput_1k"
[[variant]]
name = "draft-k{{k}}"
engine = "vllm"
method = "draft_model"
k = [1, 2]
baseline = "ar"
command = "{serve} --draft-length {{k}}"
[[variant]]
name = "ar"
engine = "vllm"
command = "{serve}"
[[variant]]
name = "sched"
engine = "vllm"
method = "draft_model"
k = 2
baseline = "ar"
schedule = "draft-k{{k}}"
command = "{serve} --draft-schedule {{schedule}}"
[[variant]]
name = "sched-json"
engine = "vllm"
method = "draft_model"
k = 2
baseline = "ar"
schedule = "draft-k{{k}}"
schedule_format = "vllm"
command = "{serve} --speculative-config '{{\\"num_speculative_tokens_per_batch_size\\": {{schedule}}}}'"
"""))
    command, record = fill_schedule(plan, plan.variant("sched"), root)
    assert command == "python3 -c pass {port} --draft-schedule 1-1:2,2-3:1,4-4:0"
    assert record["draft_schedule"] == "1-1:2,2-3:1,4-4:0" and record["schedule_workload"] == "tp"
    assert [c["k"] for c in record["schedule_choices"]] == [2, 1, 0]
    command, _ = fill_schedule(plan, plan.variant("sched-json"), root)
    assert command.endswith("""'{"num_speculative_tokens_per_batch_size": [[1,1,2],[2,3,1],[4,4,0]]}'""")
