"""--retry-errors without a server: which request-turns a resume reruns, superseded records kept as
history and left out of every figure, coverage per category, the counters' disagreement explained."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from speedbench.analysis.run_folder import RunFolderError, read_run_folder
from speedbench.analysis.run_results import compute_results
from speedbench.analysis.supersession import SupersessionError, split_superseded
from speedbench.client.recording.writer import RecordWriter, load_history
from speedbench.client.run.retry import retry_keys
from speedbench.metrics.acceptance.agreement import explain_lost_streams
from speedbench.metrics.coverage import planned_from_records, point_coverage
from speedbench.records import RunManifest, TurnRecord


def _record(qid: str, turn: int = 0, *, kind: str | None = None, num_turns: int = 1, category: str = "qa",
            supersedes: int = 0, chunks: tuple = (1, 2, 2), point: str = "c1") -> TurnRecord:
    failed = kind is not None
    return TurnRecord(record_key=f"{point}/{qid}/{turn}", run_point=point, load_shape="closed",
                      requested_concurrency=1, request_rate=None, question_id=qid, category=category,
                      sub_category="", turn_index=turn, num_turns=num_turns, warmup=False, worker=0,
                      prompt_tokens=3, prompt_sha256="p", scheduled_ns=0, send_ns=1, end_ns=1000,
                      started_unix_s=0.0, chunk_ns=[10 * (i + 1) for i in range(len(chunks))],
                      chunk_tokens=list(chunks), output_tokens=sum(chunks), chunks_are_steps=True,
                      finish_reason=None if failed else "length", error="boom" if failed else None,
                      error_kind=kind, supersedes=supersedes)


def test_the_last_record_of_a_key_is_live_and_the_rule_is_held():
    a0, b0 = _record("a", kind="connection"), _record("b")
    a1 = _record("a", kind="timeout", supersedes=1)
    a2 = _record("a", supersedes=2)
    live, superseded = split_superseded([a0, b0, a1, a2])
    assert live == [b0, a2] and superseded == [a0, a1]
    with pytest.raises(SupersessionError, match="appears twice"):
        split_superseded([b0, _record("b", supersedes=1)])  # a success is never rerun
    with pytest.raises(SupersessionError, match="supersedes 0 earlier"):
        split_superseded([a0, _record("a")])  # a repeat that does not say so
    with pytest.raises(SupersessionError, match="supersedes 2 earlier record"):
        split_superseded([a0, _record("a", supersedes=2)])


def test_retry_keys_take_the_first_transient_failure_and_the_turns_it_blocked():
    records = [
        _record("x", 0, num_turns=3), _record("x", 1, kind="http_5xx", num_turns=3),
        _record("x", 2, kind="skipped_after_error", num_turns=3),
        _record("y", 0, kind="http_4xx", num_turns=2), _record("y", 1, kind="skipped_after_error", num_turns=2),
        _record("z", 0, kind="malformed"), _record("w", 0),
    ]
    live = {r.record_key: r for r in records}
    default = ("connection", "timeout", "http_429", "http_5xx", "cancelled")
    assert retry_keys(live, default) == {"c1/x/1", "c1/x/2"}  # y's prompt is refused, z's stream did not parse
    assert retry_keys(live, default + ("malformed", "http_4xx")) == {"c1/x/1", "c1/x/2", "c1/y/0", "c1/y/1",
                                                                     "c1/z/0"}


def test_load_history_counts_what_a_rerun_supersedes(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as writer:
        for record in (_record("a", kind="connection"), _record("b"), _record("a", kind="timeout", supersedes=1)):
            writer.write(record)
    live, history = load_history(path)
    assert live["c1/a/0"].error_kind == "timeout" and history == {"c1/a/0": 2, "c1/b/0": 1}
    with RecordWriter(path) as writer:
        writer.write(_record("b", supersedes=1))
    with pytest.raises(ValueError, match="appears twice"):
        load_history(path)


def test_coverage_per_category_by_hand():
    records = [_record("a", category="qa"), _record("b", category="qa", kind="connection"),
               _record("c", 0, category="math", num_turns=2), _record("c", 1, category="math", num_turns=2)]
    assert planned_from_records(records) == {"math": 2, "qa": 2}
    coverage = point_coverage(records, {"qa": 3, "math": 2, "coding": 1}, min_share=0.95)
    assert (coverage.planned, coverage.measured, coverage.failed, coverage.missing) == (6, 3, 1, 2)
    assert coverage.share == 0.5
    qa = coverage.per_category["qa"]
    assert (qa.planned, qa.measured, qa.failed, qa.missing, qa.share) == (3, 1, 1, 1, 1 / 3)
    assert coverage.per_category["coding"].share == 0.0 and coverage.per_category["math"].share == 1.0
    assert coverage.below == ["coding", "qa"]


def _folder(tmp_path, records, planned=None):
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    options = {"selection": None, **({"planned_turns": planned} if planned else {})}
    manifest = RunManifest(engine="vllm", url="u", model_id="m", engine_version=None, server={}, dataset_dir="d",
                           dataset_config="tiny", dataset_config_sha256="s", dataset_manifest_sha256="",
                           num_rows=3, tokenizer_path="t", tokenizer_sha256="t", chat_template=False,
                           prompt_mode="chat", options=options, client_version="x", python_version="3",
                           created_unix_s=0.0)
    (folder / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    with RecordWriter(folder / "records.jsonl") as writer:
        for record in records:
            writer.write(record)
    return folder


def test_superseded_records_are_in_no_figure_and_counted(tmp_path):
    a_failed = _record("a", kind="connection", chunks=(1, 4, 4, 4))  # chunk sizes no success has
    survivors = [_record("b"), _record("c", category="math")]
    retried = replace(_record("a"), supersedes=1)
    folder = _folder(tmp_path, [a_failed, *survivors, retried], planned={"qa": 2, "math": 1})
    run = read_run_folder(folder)
    assert run.all_records == [*survivors, retried] and run.superseded == [a_failed]
    point = compute_results(folder, num_resamples=20, draft_length=3)["points"][0]
    clean = compute_results(_folder(tmp_path / "clean", [*survivors, _record("a")], planned={"qa": 2, "math": 1}),
                            num_resamples=20, draft_length=3)["points"][0]
    assert point["num_requests"] == 3 and point["num_errors"] == 0
    assert point["num_superseded"] == 1 and point["superseded_by_kind"] == {"connection": 1}
    assert point["coverage"]["share"] == 1.0 and point["coverage"]["below"] == []
    # every figure equals the run that never failed: AL = 1 + 2 accepted of 2 steps per request, by hand
    assert point["acceptance"] == clean["acceptance"] and point["totals"] == clean["totals"]
    assert point["acceptance"]["chunks"]["acceptance_length"] == pytest.approx(2.0)


def test_low_coverage_is_flagged_naming_the_category(tmp_path):
    records = [_record("a", category="qa"), _record("b", category="qa", kind="timeout"), _record("c", category="math")]
    point = compute_results(_folder(tmp_path, records, planned={"qa": 2, "math": 1}), num_resamples=20,
                            draft_length=3)["points"][0]
    assert point["coverage"]["per_category"]["qa"] == {"planned": 2, "measured": 1, "failed": 1, "missing": 0,
                                                       "share": 0.5}
    flags = [f for f in point["flags"] if f.startswith("coverage_low")]
    assert len(flags) == 1 and "qa 1/2" in flags[0] and "math" not in flags[0] and "--retry-errors" in flags[0]


def test_a_spliced_duplicate_is_refused_naming_the_file(tmp_path):
    folder = _folder(tmp_path, [_record("a"), _record("a")])
    with pytest.raises(RunFolderError, match="records.jsonl.*appears twice"):
        read_run_folder(folder)


def test_counter_disagreement_names_the_lost_streams():
    flags = ["disagreement: accepted tokens from counters vs the engine's per-request sum (120) differs from 100 "
             "by 20.0% (> 2.0%)", "disagreement: decode steps seen in chunks vs the engine's decode steps (9)"]
    failed = [_record("a", kind="connection", chunks=(1, 2)), _record("b", kind="timeout", chunks=()),
              _record("c", kind="http_429", chunks=()), _record("d", 1, kind="skipped_after_error", chunks=())]
    explained = explain_lost_streams(flags, failed)
    assert "1 request(s) failed mid-stream after 3 token(s) had arrived and 1 failed before their first token" \
        in explained[0]
    assert "never received" in explained[0]
    assert explained[1] == flags[1]  # not a counter comparison
    assert explain_lost_streams(flags, failed[2:]) == flags  # a refused request generated nothing


def test_report_and_summary_show_coverage(tmp_path):
    from speedbench.client.recording.summary import format_summary
    from speedbench.report.coverage_table import coverage_rows

    records = [_record("a", kind="connection"), _record("b"), _record("c", category="math"),
               replace(_record("a"), supersedes=1), _record("d", category="math", kind="timeout")]
    results = compute_results(_folder(tmp_path, records, planned={"qa": 2, "math": 2}), num_resamples=20,
                              draft_length=3)
    point = results["points"][0]
    rows = coverage_rows({"run/c1": point}, {"run": "SD"})
    assert [(r["category"], r["planned"], r["measured"], r["failed"], r["below"], r["superseded"]) for r in rows] == [
        ("all", 4, 3, 1, True, 1), ("math", 2, 1, 1, True, None), ("qa", 2, 2, 0, False, None)]
    assert "coverage 75.0% (retried 1)" in format_summary(results)
