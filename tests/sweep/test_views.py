"""The sweep's own tables from report rows: families of K per method and baseline, declared pairs,
random vs real, Pareto medians; expected values written out by hand."""
from __future__ import annotations

import dataclasses

from speedbench.report.rows import PositionRateRow, SpeedupRow
from speedbench.sweep.plan import load_plan
from speedbench.sweep.units import plan_units
from speedbench.sweep.views import SweepPoint, best_draft_rows, declared_pairs, pareto_points, random_vs_real
from tests.sweep.conftest import write_plan


def _plan(tmp_path):
    text = """\
        tokenizer = "tok"
        dataset = "ds"
        repeats = 2
        [[workload]]
        config = "throughput_8k"
        [[workload]]
        config = "random_8k"
        repeats = 1
        [[variant]]
        name = "eagle-k{k}"
        engine = "vllm"
        method = "eagle3"
        k = [2, 4]
        baseline = "ar"
        command = "python3 -c pass {port}"
        [[variant]]
        name = "ngram-k3"
        engine = "vllm"
        method = "ngram"
        k = 3
        baseline = "ar"
        command = "python3 -c pass {port}"
        [[variant]]
        name = "lonely-k2"
        engine = "vllm"
        method = "mtp"
        k = 2
        command = "python3 -c pass {port}"
        [[variant]]
        name = "ar"
        engine = "vllm"
        command = "python3 -c pass {port}"
        gpus = 2
        """
    return load_plan(write_plan(tmp_path, text))


def _row(variant, workload, repeat, config, c, tps, user=10.0):
    return SweepPoint.from_dict({"variant": variant, "workload": workload, "repeat": repeat,
                                 "run": f"{variant}.{workload}.r{repeat}", "dataset_config": config,
                                 "requested_concurrency": c, "request_rate": None, "output_tps": tps,
                                 "user_tps_mean": user})


def test_best_k_per_method_family_with_the_baseline_as_k0(tmp_path):
    plan = _plan(tmp_path)
    points = [_row("eagle-k2", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 100.0), (2, 110.0))]
    points += [_row("eagle-k4", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 90.0), (2, 130.0))]
    points += [_row("ar", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 80.0), (2, 81.0))]
    points += [_row("ngram-k3", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 70.0), (2, 72.0))]
    points += [_row("lonely-k2", "throughput_8k", 1, "throughput_8k", 8, 500.0)]  # no baseline: no family
    rows = {(r["method"], r["concurrency"]): r for r in best_draft_rows(plan, points)}
    assert set(rows) == {("eagle3", 8), ("ngram", 8)}
    eagle = rows[("eagle3", 8)]
    # medians: K2 105 (MAD 5), K4 110 (MAD 20), K0 80.5: K4 wins by 5 <= 5 + 20 -> uncertain
    assert (eagle["best_draft_length"], eagle["best_median_output_tps"], eagle["best_mad"]) == (4, 110.0, 20.0)
    assert (eagle["runner_up_draft_length"], eagle["runner_up_median_output_tps"]) == (2, 105.0)
    assert eagle["uncertain"] is True
    ngram = rows[("ngram", 8)]  # the baseline (80.5) beats n-gram (71): K = 0, no speculation
    assert (ngram["best_draft_length"], ngram["runner_up_draft_length"], ngram["uncertain"]) == (0, 3, False)


def test_declared_pairs_random_vs_real_and_pareto(tmp_path):
    plan = _plan(tmp_path)
    by_run = {u.unit_id: u for u in plan_units(plan, tmp_path)}
    speedup = [{"sd_run": "eagle-k2.throughput_8k.r1", "baseline_run": "ar.throughput_8k.r1", "concurrency": 8},
               {"sd_run": "eagle-k2.throughput_8k.r1", "baseline_run": "ar.throughput_8k.r2", "concurrency": 8},
               {"sd_run": "lonely-k2.throughput_8k.r1", "baseline_run": "ar.throughput_8k.r1", "concurrency": 8}]
    pairs = declared_pairs([SpeedupRow.from_dict(r) for r in speedup], by_run)
    assert pairs == [{"variant": "eagle-k2", "baseline": "ar", "workload": "throughput_8k", "repeat": 1, **speedup[0]}]
    assert [(r["sd_run"], r["baseline_run"]) for r in pairs] == [
        ("eagle-k2.throughput_8k.r1", "ar.throughput_8k.r1")]
    points = [_row("ar", "throughput_8k", 1, "throughput_8k", 4, 100.0, 20.0),
              _row("ar", "throughput_8k", 2, "throughput_8k", 4, 120.0, 30.0),
              _row("ar", "random_8k", 1, "random_8k", 4, 132.0, 33.0)]
    (comparison,) = random_vs_real(points)
    # real: median(100, 120) = 110; random 132: 132 / 110 - 1 = 0.2
    assert (comparison["output_tps_real"], comparison["output_tps_random"]) == (110.0, 132.0)
    assert abs(comparison["overestimate"] - 0.2) < 1e-12 and comparison["isl_bucket"] == "8k"
    pareto = {(p["workload"], p["load"]): p for p in pareto_points(plan, points)}
    # two GPUs: 110 / 2 per GPU; per-user speed median(20, 30) = 25
    assert (pareto[("throughput_8k", 4)]["output_tps_per_gpu"], pareto[("throughput_8k", 4)]["user_tps"]) == (55.0, 25.0)
    # a point whose throughput the report could not measure has none here either (was 0.0)
    unmeasured = pareto_points(plan, [_row("ar", "throughput_8k", 1, "throughput_8k", 16, None, None)])
    assert [(p["load"], p["output_tps_per_gpu"], p["user_tps"]) for p in unmeasured] == [(16, None, None)]
    rate = dataclasses.replace(_row("ar", "throughput_8k", 1, "throughput_8k", None, 50.0), request_rate=0.5)
    assert [p["load_label"] for p in pareto_points(plan, points[:1] + [rate])] == ["0.5/s", "c=4"]


def test_two_drafters_of_one_method_are_two_families(tmp_path):
    """EAGLE3 heads from two sources at K = 2 and 4 against one baseline: each head's best K from its
    own runs (one family per method keyed K -> runs kept only the second head's K = 2 and K = 4)."""
    text = """\
        tokenizer = "tok"
        dataset = "ds"
        [[workload]]
        config = "throughput_8k"
        [[variant]]
        name = "head-a-k{k}"
        engine = "vllm"
        method = "eagle3"
        drafter = "org/head-a"
        k = [2, 4]
        baseline = "ar"
        command = "python3 -c pass {port}"
        [[variant]]
        name = "head-b-k{k}"
        engine = "vllm"
        method = "eagle3"
        drafter = "org/head-b"
        k = [2, 4]
        baseline = "ar"
        command = "python3 -c pass {port}"
        [[variant]]
        name = "same-head-other-flags-k{k}"
        engine = "vllm"
        method = "eagle3"
        drafter = "org/head-b"
        k = [2]
        baseline = "ar"
        command = "python3 -c pass {port} --enforce-eager"
        [[variant]]
        name = "ar"
        engine = "vllm"
        command = "python3 -c pass {port}"
        """
    plan = load_plan(write_plan(tmp_path, text))
    tps = {"head-a-k2": 150.0, "head-a-k4": 120.0, "head-b-k2": 90.0, "head-b-k4": 140.0,
           "same-head-other-flags-k2": 200.0, "ar": 100.0}
    points = [_row(name, "throughput_8k", 1, "throughput_8k", 8, value) for name, value in tps.items()]
    rows = [(r["drafter"], r["variants"], r["best_draft_length"], r["best_median_output_tps"])
            for r in best_draft_rows(plan, points)]
    # head-b's K = 2 is there twice (two server configurations): their [[variant]] tables are compared apart
    assert rows == [("org/head-a", "head-a-k2, head-a-k4", 2, 150.0),
                    ("org/head-b", "head-b-k2, head-b-k4", 4, 140.0),
                    ("org/head-b", "same-head-other-flags-k2", 2, 200.0)]


def test_position_rates_per_category_one_row_each(tmp_path):
    """The report's per-position rates of every category (not only "all"), one row per variant,
    point and category with a column per position."""
    from speedbench.sweep.views import position_rate_rows

    plan = _plan(tmp_path)
    by_run = {u.unit_id: u for u in plan_units(plan, tmp_path)}
    report_rows = [{"run": "eagle-k2.throughput_8k.r1", "point": "c8", "category": category, "position": position,
                    "conditional_acceptance_rate": rate, "source": "engine"}
                   for category, rates in (("all", (0.8, 0.5)), ("low_entropy", (0.9, 0.6)), ("mixed", (0.7, None)))
                   for position, rate in zip((1, 2), rates) if rate is not None]
    rows = position_rate_rows([PositionRateRow.from_dict(r) for r in report_rows], by_run)
    assert [(r["variant"], r["repeat"], r["point"], r["category"], r.get("AR_1"), r.get("AR_2")) for r in rows] == [
        ("eagle-k2", 1, "c8", "all", 0.8, 0.5), ("eagle-k2", 1, "c8", "low_entropy", 0.9, 0.6),
        ("eagle-k2", 1, "c8", "mixed", 0.7, None)]


def test_an_uncertain_choice_is_highlighted_with_its_note_in_view(tmp_path):
    from speedbench.sweep.report import html

    plan = _plan(tmp_path)
    points = [_row("eagle-k2", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 100.0), (2, 110.0))]
    points += [_row("eagle-k4", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 90.0), (2, 130.0))]
    points += [_row("ar", "throughput_8k", r, "throughput_8k", 8, v) for r, v in ((1, 80.0), (2, 81.0))]
    (row,) = [r for r in best_draft_rows(plan, points) if r["method"] == "eagle3"]
    page = html({"best_draft_length": [row]}, "t", {}, [], {"plan": "p", "plan_sha256": "s", "run_folders": []})
    assert '<tr class="uncertain">' in page and "do not separate the best draft length" in page
    header = page[page.index("<thead>"):page.index("</thead>")]
    assert header.index("<th>note</th>") < header.index("<th>runner_up_draft_length</th>")  # seen first


def test_one_repeat_writes_no_spread(tmp_path):
    """A spread over one value was not measured: no MAD is written (it was 0)."""
    plan = _plan(tmp_path)
    points = [_row("eagle-k2", "throughput_8k", 1, "throughput_8k", 8, 100.0),
              _row("eagle-k4", "throughput_8k", 1, "throughput_8k", 8, 120.0),
              _row("ar", "throughput_8k", 1, "throughput_8k", 8, 90.0)]
    (row,) = [r for r in best_draft_rows(plan, points) if r["method"] == "eagle3"]
    assert (row["best_draft_length"], row["repeats"], row["uncertain"]) == (4, 1, None)
    assert (row["best_mad"], row["runner_up_mad"]) == (None, None)
    assert {k: c["mad"] for k, c in row["candidates"].items()} == {"0": None, "2": None, "4": None}
