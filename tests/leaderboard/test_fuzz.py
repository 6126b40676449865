"""Property-based fuzzing of the bundle parser and validator (hypothesis): whatever is uploaded,
the outcome is an accepted bundle or a rejection naming its rule, never another exception."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speedbench.leaderboard.strict_json import loads_strict
from speedbench.leaderboard.schema import BundleRejected, parse_submission
from speedbench.leaderboard.validate import compute_entry_metrics, parse_bundle

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children,
                                                                                       max_size=5),
                    max_leaves=20)
RECORD_FIELDS = ["record_key", "run_point", "question_id", "category", "turn_index", "num_turns", "warmup",
                 "prompt_tokens", "scheduled_ns", "send_ns", "end_ns", "chunk_ns", "chunk_tokens", "chunks_are_steps",
                 "output_tokens", "finish_reason", "engine_stats", "error", "requested_concurrency", "started_unix_s"]


def outcome(data: bytes, known_builds) -> str:
    """"accepted" or the rule of the rejection; any other exception fails the test."""
    try:
        compute_entry_metrics(parse_bundle(data, known_builds))
    except BundleRejected as exc:
        assert exc.rule, f"a rejection without a rule: {exc}"
        return exc.rule
    return "accepted"


@FUZZ
@given(body=st.binary(max_size=2000), magic=st.sampled_from([b"\x1f\x8b\x08\x00", b"PK\x03\x04", b""]))
def test_arbitrary_bytes(body, magic, known_builds):
    assert outcome(magic + body, known_builds) != "accepted"


@FUZZ
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_a_flipped_byte_in_a_valid_bundle(position, value, valid_bundle, known_builds):
    data = bytearray(valid_bundle)
    data[position % len(data)] = value
    outcome(bytes(data), known_builds)


@FUZZ
@given(field=st.sampled_from(RECORD_FIELDS), value=JSON, line=st.integers(min_value=0, max_value=60))
def test_one_record_field_set_to_any_json(field, value, line, valid_bundle, known_builds, bundles):
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    rows[line % len(rows)] = {**rows[line % len(rows)], field: value}
    outcome(bundles.repack(bundles.with_records(files, "qual", rows)), known_builds)


@FUZZ
@given(text=st.text(max_size=200), line=st.integers(min_value=0, max_value=60))
def test_one_records_line_replaced_by_any_text(text, line, valid_bundle, known_builds, bundles):
    files = bundles.unpack(valid_bundle)
    rows = [json.dumps(r) for r in bundles.records(files, "qual")]
    rows[line % len(rows)] = text.replace("\n", " ")
    outcome(bundles.repack(bundles.with_records(files, "qual", rows)), known_builds)


@FUZZ
@given(field=st.sampled_from(["model", "drafter", "sd_method", "engine", "engine_version", "gpu", "notes",
                              "submitter", "model_family", "draft_length", "temperature", "extra"]),
       value=JSON | st.text(alphabet=st.characters(codec=None), max_size=40))
def test_any_metadata_value(field, value, valid_bundle, known_builds, bundles):
    files = bundles.edit_submission(bundles.unpack(valid_bundle), **{field: value})
    rule = outcome(bundles.repack(files), known_builds)
    if rule == "accepted":
        text = json.loads(files["submission.json"])["metadata"].get(field)
        if isinstance(text, str):  # accepted text is printable, encodable, and no formula
            text.encode("utf-8")
            assert text.strip() == "" or text.strip()[0] not in "=+-@"


@FUZZ
@given(document=JSON)
def test_any_submission_document(document):
    try:
        parse_submission(document)
    except BundleRejected as exc:
        assert exc.rule


@FUZZ
@given(text=st.text(max_size=300))
def test_strict_json_on_any_text(text):
    try:
        loads_strict(text.encode("utf-8", "surrogatepass"), "x.json")
    except BundleRejected as exc:
        assert exc.rule and exc.where == "x.json"


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", '\\ud83d\\"'])
def test_surrogate_escapes_anywhere(escape):
    with pytest.raises(BundleRejected) as caught:
        loads_strict(f'{{"a": [1, {{"b": "x{escape}"}}]}}', "x.json")
    assert caught.value.rule in ("json.surrogate", "json.invalid")
    assert loads_strict('{"a": "\\ud83d\\ude00"}', "x.json") == {"a": "\U0001F600"}  # a proper pair is fine


@FUZZ
@given(field=st.sampled_from(["engine", "dataset_config", "dataset_config_sha256", "options", "num_rows", "model_id"]),
       value=JSON)
def test_any_manifest_value(field, value, valid_bundle, known_builds, bundles):
    files = bundles.unpack(valid_bundle)
    name = bundles.member(files, "qual", "manifest.json")
    manifest = json.loads(files[name])
    manifest[field] = value
    outcome(bundles.repack({**files, name: json.dumps(manifest).encode()}), known_builds)
