"""results.json as typed dataclasses (speedbench.analysis.results_types): written byte-identical to the
dicts the analysis assembles, read back with errors that name the field, read by attribute."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from speedbench.analysis.results_types import PointFigures, ResultsFormatError, RunResults
from speedbench.analysis.run_folder import read_run_folder
from speedbench.analysis.run_results import _add_coverage, analyse_point, compute_results
from speedbench.metrics.results import to_jsonable


@pytest.fixture
def sd_run(tmp_path, run_writer) -> Path:
    """A synthetic SD run folder (tests/report/conftest.py): 3 categories x 6 requests at c1 and c2."""
    return run_writer(tmp_path / "sd", speculative=True, step_s=0.02, seed=1)


def _assembled(path: Path) -> dict:
    """The points as analyse_point's own dicts (PointResult.to_dict) with their coverage, without the typed results."""
    folder = read_run_folder(path)
    points = [analyse_point(p, folder.point_records(p), folder.manifest.engine, folder.counters.get(p), 0.02, 50,
                            4).to_dict() for p in folder.point_names]
    _add_coverage(folder, points)  # the coverage fields, added to the dicts as run_results does
    return to_jsonable({"points": points})["points"]


def test_results_written_from_the_types_are_byte_identical(sd_run):
    written = compute_results(sd_run, num_resamples=50, draft_length=4)
    assert json.dumps(written["points"]) == json.dumps(_assembled(sd_run))
    assert json.dumps(RunResults.from_dict(copy.deepcopy(written)).to_dict()) == json.dumps(written)
    assert list(written) == ["format_version", "engine", "model_id", "engine_version", "dataset_config", "manifest",
                             "records", "points", "selection"]


def test_readers_read_by_attribute(sd_run):
    written = compute_results(sd_run, num_resamples=50, draft_length=4)
    results = RunResults.from_dict(copy.deepcopy(written))
    point, raw = results.points[0], written["points"][0]
    assert point.run_point == raw["run_point"] == "c1"
    assert point.primary_acceptance_source == "engine"
    assert point.primary.acceptance_length == raw["acceptance"]["engine"]["acceptance_length"]
    assert point.primary.ci == tuple(raw["acceptance"]["engine"]["acceptance_length_ci"])
    # every draft accepted; 23 tokens after the prefill token: four steps of 1 + 4, a last one of 3 (max_tokens 24)
    assert point.primary.per_category["math"].acceptance_length == pytest.approx(1 + (4 * 4 + 2) / 5)
    assert point.latency.ttft.p50 == raw["latency"]["ttft"]["p50"]
    assert point.latency.per_category["coding"].num_requests == 6
    assert point.totals.ok == 18 and point.client_timing.client_lagged_share == 0.0


def test_a_new_key_stays_in_its_place():
    data = {"run_point": "c1", "num_requests": 1, "added_by_a_newer_client": [1], "num_errors": 0}
    point = PointFigures.from_dict(data)
    assert point.extra == {"added_by_a_newer_client": [1]}
    assert json.dumps(point.to_dict()) == json.dumps(data)


@pytest.mark.parametrize("change, message", [
    (lambda r: r["points"][0]["latency"]["ttft"].update(p50="fast"),
     "results.points[0].latency.ttft.p50: expected a number, got 'fast'"),
    (lambda r: r["points"][0].pop("run_point"), "results.points[0].run_point: missing"),
    (lambda r: r["points"][0]["acceptance"]["engine"]["per_category"].update(math=[]),
     "results.points[0].acceptance.engine.per_category.math: expected an object, got []"),
    (lambda r: r["points"][0].update(num_requests=True), "results.points[0].num_requests: expected an integer"),
    (lambda r: r.update(points={}), "results.points: expected a list, got {}"),
    (lambda r: r["points"][0]["totals"].update(ok="3"), "results.points[0].totals.ok: expected an integer, got '3'"),
    (lambda r: r["points"][0]["totals"].update(ok=2.5), "results.points[0].totals.ok: expected an integer, got 2.5"),
])
def test_a_strangers_results_are_refused_naming_the_field(sd_run, change, message):
    results = compute_results(sd_run, num_resamples=0, draft_length=4)
    change(results)
    with pytest.raises(ResultsFormatError) as error:
        RunResults.from_dict(results)
    assert str(error.value).startswith(message)
