"""The board reads its metrics document through the lenient typed form
(:mod:`speedbench.leaderboard.metrics_doc`): the rows of a set of stored entries, clean and
damaged, are written out here by hand (what the board showed when it read the dicts by key)."""
from __future__ import annotations

import math

from speedbench.leaderboard import board
from speedbench.leaderboard.metrics_doc import BoardMetrics, PairedComparison
from speedbench.leaderboard.store import Entry

META = {"model": "m/Model-8B", "model_family": "llama", "drafter": "d/Eagle", "sd_method": "eagle3",
        "engine": "vllm", "engine_version": "0.11.0", "gpu": "H100", "draft_length": 3, "temperature": 0.0}
CLEAN = {
    "metrics_version": "1",
    "acceptance": {"acceptance_length": 2.71234, "acceptance_length_ci": [2.5004, 2.9], "num_steps": 10,
                   "acceptance_length_request_weighted": 2.6, "per_category": {
                       "coding": {"acceptance_length": 3.0004, "acceptance_length_ci": [2.8, 3.2]},
                       "math": "not an object",
                       "mixed": {"acceptance_length": 1.5, "acceptance_length_ci": None}}},
    "points": [
        {"role": "sd", "isl": "1k", "concurrency": 1, "output_tps": 100.0, "user_tps_p50": 90.0,
         "client_lagged_share": 0.01234},
        {"role": "sd", "isl": "1k", "concurrency": 4, "output_tps": 300.0, "user_tps_p50": 70.0,
         "client_lagged_share": 0.0},
        {"role": "sd", "isl": "8k", "concurrency": 1, "output_tps": 50.0, "user_tps_p50": 45.0},
        {"role": "baseline", "isl": "2k", "concurrency": 1, "output_tps": 80.0, "user_tps_p50": 80.0},
    ],
    "speedup": [{"isl": "1k", "concurrency": 1, "speedup_measured": 1.5},
                {"isl": "1k", "concurrency": 4, "speedup_measured": 1.83333},
                {"isl": "8k", "concurrency": 1, "speedup_measured": None}],
    "losslessness": {"checked": True, "num_compared": 10, "num_divergent": 0},
    "phases": {"phases": {"thinking": {"acceptance_length": 2.0, "acceptance_length_ci": [1.9, 2.1]}}},
}
# wrong values inside well-formed sections: every damaged figure is an empty cell
DAMAGED_VALUES = {
    "acceptance": {"acceptance_length": "x", "acceptance_length_ci": [None, "y"],
                   "acceptance_length_request_weighted": math.inf, "per_category": {"qa": {}}},
    "points": [{"role": "sd", "isl": "3k", "concurrency": 1},
               {"role": "sd", "isl": "2k", "client_lagged_share": True}],
    "speedup": [{"isl": "2k", "concurrency": "c", "speedup_measured": 2.0},
                {"isl": "2k", "concurrency": 8, "speedup_measured": math.nan}, {"isl": "16k"}],
}
IDENTITY = {"model": "m/Model-8B", "model_family": "llama", "drafter": "d/Eagle", "sd_method": "eagle3",
            "engine": "vllm", "engine_version": "0.11.0", "gpu": "H100", "draft_length": 3, "temperature": 0.0}


def entry(metrics, metadata=META, warnings=()):
    return Entry(id="sb-1", bundle_sha256="x", archive_sha256="x", submitted_at="2026-12-01T10:00:00Z",
                 schema_version=1, metadata=metadata, metrics=metrics, metrics_version="1", warnings=list(warnings))


def test_clean_entry_row():
    warnings = [{"code": "b.rule"}, {"code": "a.rule"}, "not a warning"]
    assert board.entry_row(entry(CLEAN, warnings=warnings)) == {
        **IDENTITY, "k": "3", "id": "sb-1", "al": 2.712, "al_ci_low": 2.5, "al_ci_high": 2.9, "al_request_weighted": 2.6,
        "al_coding": 3.0, "al_coding_ci_low": 2.8, "al_coding_ci_high": 3.2,
        "al_mixed": 1.5, "al_mixed_ci_low": None, "al_mixed_ci_high": None,
        "speedup_1k": 1.833, "speedup_1k_at": 4, "isls": ["1k", "8k"], "client_lagged": 1.2,
        "submitted": "2026-12-01", "trust": "self-reported", "warnings": "a.rule, b.rule",
        "lossless": "100% identical (10)", "al_thinking": 2.0, "al_thinking_ci_low": 1.9, "al_thinking_ci_high": 2.1}


def test_damaged_values_are_empty_cells():
    metadata = {**META, "draft_length": "three", "gpu": None, "temperature": True}
    assert board.entry_row(entry(DAMAGED_VALUES, metadata)) == {
        **IDENTITY, "gpu": "", "draft_length": None, "k": "", "temperature": None, "id": "sb-1",
        "al": None, "al_ci_low": None, "al_ci_high": None, "al_request_weighted": None,
        "al_qa": None, "al_qa_ci_low": None, "al_qa_ci_high": None,
        "speedup_2k": 2.0, "speedup_2k_at": None, "isls": ["2k"], "client_lagged": None,
        "submitted": "2026-12-01", "trust": "self-reported", "warnings": "", "lossless": ""}


def test_an_entry_without_figures_renders_empty_cells():
    assert board.entry_row(entry({"acceptance": None, "points": [], "speedup": [], "phases": []})) == {
        **IDENTITY, "k": "3", "id": "sb-1", "al": None, "al_ci_low": None, "al_ci_high": None, "al_request_weighted": None,
        "isls": [], "client_lagged": None, "submitted": "2026-12-01", "trust": "self-reported", "warnings": "",
        "lossless": ""}


def test_wrongly_shaped_sections_read_as_empty_and_make_an_error_row():
    """The lenient read never raises; the sections of the wrong shape are named, and the board
    shows such an entry as an error row (as it did when reading the dicts raised)."""
    cases = [
        ({"acceptance": [1, 2]}, ["metrics.acceptance: not an object"]),
        ({"acceptance": {"acceptance_length_ci": [2.0], "per_category": [1]}},
         ["metrics.acceptance.acceptance_length_ci: not two values", "metrics.acceptance.per_category: not an object"]),
        ({"acceptance": {"per_category": {"qa": {"acceptance_length_ci": 3}}}},
         ["metrics.acceptance.per_category.qa.acceptance_length_ci: not two values"]),
        ({"points": None, "speedup": "oops"},
         ["metrics.points: not a list of objects", "metrics.speedup: not a list of objects"]),
        ({"points": [{"role": "sd"}, "not a point"], "speedup": {"isl": "1k"}},
         ["metrics.points: not a list of objects", "metrics.speedup: not a list of objects"]),
    ]
    for metrics, expected in cases:
        problems = []
        parsed = BoardMetrics.read(metrics, problems)
        assert problems == expected
        assert parsed.speedup == [] and parsed.acceptance.ci == (None, None)
        assert all(c.ci == (None, None) for c in parsed.acceptance.per_category.values())
        assert [p.role for p in parsed.points] == (["sd"] if "not a point" in str(metrics) else [])
        assert board.safe_rows([entry(metrics)]) == [
            {"id": "sb-1", "model": "(entry not shown: MetricsShapeError)", "trust": "error", "isls": [],
             "warnings": ""}]
    assert board.pareto_points([entry({"points": [{"role": "sd", "isl": "1k", "output_tps": 5.0,
                                                   "user_tps_p50": 4.0, "concurrency": 1}, 7]})])[0]["output_tps"] == 5.0


def test_pareto_points_read_the_typed_points():
    points = board.pareto_points([entry(CLEAN), entry(DAMAGED_VALUES)])
    # one frontier over the entry's SD points: (90, 100) and (70, 300) are on it, (45, 50) is dominated
    assert points == [
        {"entry": "sb-1 (1k)", "user_tps": 90.0, "output_tps": 100.0, "concurrency": 1, "client_lagged_pct": 1.2,
         "on_frontier": True},
        {"entry": "sb-1 (1k)", "user_tps": 70.0, "output_tps": 300.0, "concurrency": 4, "client_lagged_pct": 0.0,
         "on_frontier": True},
        {"entry": "sb-1 (8k)", "user_tps": 45.0, "output_tps": 50.0, "concurrency": 1, "client_lagged_pct": None,
         "on_frontier": False}]
    alone = board.pareto_points([entry(CLEAN)], isl="8k")
    assert [(p["entry"], p["on_frontier"]) for p in alone] == [("sb-1 (8k)", True)]


def test_paired_comparison_reads_the_difference():
    diff = PairedComparison.read({"acceptance_length": {"value_a": 2.0, "value_b": 2.5, "difference": 0.5,
                                                        "difference_ci": [0.25, 0.75], "num_paired": 40},
                                  "acceptance_length_request_weighted": {}}).acceptance_length
    assert (diff.value_a, diff.value_b, diff.difference, diff.ci, diff.num_paired) == (2.0, 2.5, 0.5, (0.25, 0.75), 40)
    assert PairedComparison.read({"acceptance_length": {"difference_ci": [1]}}).acceptance_length.ci == (None, None)
