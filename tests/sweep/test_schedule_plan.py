"""Plan variants served with a derived schedule (``schedule = "<family>"``): ordering, refusals, the report row."""
from __future__ import annotations

import pytest

from speedbench.sweep.plan import PlanError
from speedbench.sweep.schedule_view import schedule_rows
from speedbench.sweep.views import SweepPoint
from tests.sweep.test_plan import HEAD, VARIANTS, _plan, _refused

SCHEDULED = """
[[variant]]
name = "eagle-sched"
engine = "vllm"
method = "eagle3"
k = 5
baseline = "ar"
schedule = "eagle-k{k}"
schedule_format = "vllm"
command = "python3 -c pass --port {port} --speculative-config '{\\"num_speculative_tokens_per_batch_size\\": {schedule}}'"
"""


def test_a_schedule_variant_runs_after_the_static_ones(tmp_path):
    plan = _plan(tmp_path, HEAD + SCHEDULED + VARIANTS)  # written first, run last
    assert [v.name for v in plan.variants] == ["eagle-k2", "eagle-k3", "eagle-k5", "ar", "eagle-sched"]
    sched = plan.variants[-1]
    assert (sched.schedule, sched.schedule_format, sched.family, sched.k) == ("eagle-k{k}", "vllm", "eagle-sched", 5)
    assert plan.variants[0].family == "eagle-k{k}" and plan.variants[0].schedule is None


@pytest.mark.parametrize("change, message", [
    (('schedule = "eagle-k{k}"', 'schedule = "eagle"'),
     "schedule 'eagle' names no [[variant]] table of speculative variants; those are: eagle-k{k}"),
    (("{schedule}}'", "[]}'"), "started by a command with {schedule} in it"),
    (("k = 5\n", "k = 3\n"), "k = 3 is below 'eagle-k{k}''s largest K 5"),
    (('schedule_format = "vllm"', 'schedule_format = "json"'), "schedule_format"),
])
def test_schedule_variant_refusals(tmp_path, change, message):
    text = HEAD + VARIANTS + SCHEDULED.replace(*change)
    assert message in _refused(tmp_path, text)


def test_schedule_workload_must_exist(tmp_path):
    text = HEAD + VARIANTS + SCHEDULED.replace('schedule_format = "vllm"', 'schedule_workload = "nope"')
    with pytest.raises(PlanError, match="schedule_workload 'nope' is not one of lite_qualitative"):
        _plan(tmp_path, text)


def test_the_report_row_sets_the_schedule_beside_the_best_static_k_and_the_baseline(tmp_path):
    plan = _plan(tmp_path, HEAD + VARIANTS + SCHEDULED)
    w = "lite_qualitative"

    def point(variant, c, tps, user):
        return SweepPoint.from_dict({"run": f"{variant}.{c}", "workload": w, "variant": variant,
                                     "requested_concurrency": c, "output_tps": tps, "user_tps_mean": user})

    points = [point("eagle-k2", 1, 10.0, 10.0), point("eagle-k3", 1, 12.0, 12.0), point("eagle-k5", 1, 11.0, 11.0),
              point("ar", 1, 8.0, 8.0), point("eagle-sched", 1, 11.5, 11.5), point("eagle-sched", 1, 12.5, 12.5),
              point("eagle-k2", 4, 30.0, 7.0), point("eagle-k3", 4, 30.0, 7.5), point("ar", 4, 29.0, 7.2),
              point("eagle-sched", 4, 31.0, 7.7)]
    rows = schedule_rows(plan, points, {"eagle-sched": "1-1:3,2-4:2"})
    # c=1: the schedule's two repeats have median 12.0; K=3 is the best static (12.0); c=4: K 2 and 3 tie at 30:
    # the smaller K
    assert [(r["concurrency"], r["schedule_k"], r["schedule_output_tps"], r["schedule_user_tps"], r["best_static_k"],
             r["best_static_output_tps"], r["best_static_user_tps"], r["baseline_output_tps"], r["repeats"])
            for r in rows] == [(1, 3, 12.0, 12.0, 3, 12.0, 12.0, 8.0, 2), (4, 2, 31.0, 7.7, 2, 30.0, 7.0, 29.0, 1)]
