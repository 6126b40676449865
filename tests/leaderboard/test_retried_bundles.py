"""The board and --retry-errors: a failed record superseded by a rerun that says so is history (the
bundle is accepted, its figures those of the live records); any other repeat is refused; a bundle
under the coverage bounds is refused naming the categories."""
from __future__ import annotations

from speedbench.analysis.coverage_rules import CoverageThresholds, check_category_coverage
from speedbench.leaderboard.validate import parse_bundle, submit_bundle
from speedbench.records import TurnRecord

from tests.leaderboard.test_hostile import edit_one


def _with_failed_attempt(B, bundle: bytes, index: int = 2, supersedes: int = 1) -> bytes:
    """Record ``index`` preceded by a failed attempt of the same request-turn, and marked as its rerun."""
    files = B.unpack(bundle)
    rows = B.records(files, "qual")
    failed = {**rows[index], "error": "ClientPayloadError: cut", "error_kind": "connection", "finish_reason": None,
              "chunk_ns": rows[index]["chunk_ns"][:1], "chunk_tokens": [9], "engine_stats": None}
    rows = rows[:index] + [failed, {**rows[index], "supersedes": supersedes}] + rows[index + 1:]
    return B.repack(B.with_records(files, "qual", rows))


def test_a_superseded_failure_is_history(seeded_store, known_builds, valid_bundle, bundles):
    retried = _with_failed_attempt(bundles, valid_bundle)
    original = parse_bundle(valid_bundle, known_builds)
    parsed = parse_bundle(retried, known_builds)
    run = next(r for r in parsed.runs if r.path.endswith("qual"))
    before = next(r for r in original.runs if r.path.endswith("qual"))
    assert len(run.superseded) == 1 and run.superseded[0].error_kind == "connection"
    assert len(run.all_records) == len(before.all_records) and run.num_errors == 0
    assert submit_bundle(retried, seeded_store, known_builds).id


def test_a_repeat_that_does_not_say_so_is_refused(seeded_store, known_builds, valid_bundle, bundles):
    bundles.assert_rejected(seeded_store, known_builds, _with_failed_attempt(bundles, valid_bundle, supersedes=0),
                            "record.duplicate_key", "record_key")
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    twice = bundles.repack(bundles.with_records(files, "qual", rows[:3] + [{**rows[2], "supersedes": 1}] + rows[3:]))
    bundles.assert_rejected(seeded_store, known_builds, twice, "record.duplicate_key", "record_key", "appears twice")


def test_missing_prompts_are_refused_naming_the_categories(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    data = bundles.repack(bundles.with_records(files, "qual", rows[:1]))
    bundles.assert_rejected(seeded_store, known_builds, data, "coverage.prompts", "question_id",
                            "1 of the config's 55", "categories below 95%:")


def _record(qid: str, ok: bool = True, point: str = "c1") -> TurnRecord:
    return TurnRecord(record_key=f"{point}/{qid}/0", run_point=point, load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id=qid, category="x", sub_category="", turn_index=0, num_turns=1,
                      warmup=False, worker=0, prompt_tokens=1, prompt_sha256="", scheduled_ns=0, send_ns=0, end_ns=1,
                      started_unix_s=0.0, error=None if ok else "boom", error_kind=None if ok else "timeout")


def test_category_coverage_rule_by_hand():
    # 20 coding prompts, 20 math: the overall share can pass 90% while math answers 18 of 20 (90% < 95%)
    questions = {f"c{i}": "coding" for i in range(20)} | {f"m{i}": "math" for i in range(20)}
    records = [_record(q) for q in questions if q not in ("m0", "m1")] + [_record("m0", ok=False)]
    violations = check_category_coverage(records, questions)
    assert [v.rule for v in violations] == ["coverage.categories"]
    assert "math 18/20" in violations[0].detail and "coding" not in violations[0].detail
    assert check_category_coverage(records, questions, CoverageThresholds(min_category_answered=0.9)) == []
    complete = [r for r in records if r.question_id != "m0"] + [_record("m0"), _record("m1")]
    assert check_category_coverage(complete, questions) == []  # m0 rerun (its live record a success), m1 answered
