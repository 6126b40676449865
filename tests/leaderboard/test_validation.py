"""Every bad bundle is rejected with a clear message and leaves the store exactly as it was."""
from __future__ import annotations

import json
import sys
import tarfile

import pytest

from speedbench.leaderboard.archive import ArchiveLimits, read_archive
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.validate import submit_bundle


# The bundle-editing helpers are defined once, in bundles.py (loaded by path: --import-mode=importlib).
_bundles = sys.modules["speedbench_leaderboard_test_fixtures"].load_helpers("bundles")
unpack, repack, as_zip, edit_submission = _bundles.unpack, _bundles.repack, _bundles.as_zip, _bundles.edit_submission


def first_records_member(files: dict[str, bytes]) -> str:
    return sorted(n for n in files if n.endswith("records.jsonl"))[0]


def edit_record(files: dict[str, bytes], line: int = 0, raw: str | None = None, **changes) -> dict[str, bytes]:
    name = first_records_member(files)
    lines = files[name].decode().splitlines()
    if raw is not None:
        lines[line] = raw
    else:
        record = json.loads(lines[line])
        record.update(changes)
        lines[line] = json.dumps(record)
    return {**files, name: ("\n".join(lines) + "\n").encode()}


def assert_rejected(store, known_builds, data: bytes, *fragments: str, limits: ArchiveLimits | None = None,
                    rule: str | None = None, field: str | None = None):
    before = store.snapshot()
    with pytest.raises(BundleRejected) as caught:
        submit_bundle(data, store, known_builds, limits)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    if rule is not None:
        assert caught.value.rule == rule, message
        assert f"[rule {rule}]" in message
    if field is not None:
        assert caught.value.field == field, message
    assert store.snapshot() == before
    return message


def test_valid_bundle_is_accepted_and_stored(seeded_store, known_builds, valid_bundle):
    before = seeded_store.count()
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    assert seeded_store.count() == before + 1
    assert seeded_store.archive(entry.id) == valid_bundle
    assert seeded_store.get(entry.id).metadata["gpu"] == "RTX 4090"


def test_oversized_upload(seeded_store, known_builds, valid_bundle):
    assert_rejected(seeded_store, known_builds, valid_bundle, "limit is",
                    limits=ArchiveLimits(max_archive_bytes=len(valid_bundle) - 1))


def test_decompression_bomb_stops_at_the_unpacked_cap(seeded_store, known_builds):
    files = {"submission.json": b"{}", "runs/a/records.jsonl": b" " * 5_000_000}
    bomb = repack(files)
    assert len(bomb) < 20_000  # compresses ~250:1
    assert_rejected(seeded_store, known_builds, bomb, "unpacks to more than",
                    limits=ArchiveLimits(max_total_bytes=1_000_000))


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_archive(seeded_store, known_builds, valid_bundle, cut):
    assert_rejected(seeded_store, known_builds, valid_bundle[: int(len(valid_bundle) * cut)], "truncated or corrupt")


def test_truncated_zip(seeded_store, known_builds, valid_bundle):
    data = as_zip(unpack(valid_bundle))
    assert_rejected(seeded_store, known_builds, data[: len(data) // 2], "truncated or corrupt (zip)")


def test_corrupt_and_foreign_uploads(seeded_store, known_builds):
    assert_rejected(seeded_store, known_builds, b"\x1f\x8b" + bytes(range(256)) * 4, "truncated or corrupt")
    assert_rejected(seeded_store, known_builds, b"\x80\x04\x95pickle", "neither a tar.gz nor a zip")
    assert_rejected(seeded_store, known_builds, b"", "empty")


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_wrong_schema_version(seeded_store, known_builds, valid_bundle, version):
    data = repack(edit_submission(unpack(valid_bundle), schema_version=version))
    assert_rejected(seeded_store, known_builds, data, "schema_version", "not supported")


@pytest.mark.parametrize("field,value", [("started_unix_s", "NaN"), ("started_unix_s", "Infinity"),
                                         ("started_unix_s", "-Infinity"), ("started_unix_s", "1e999")])
def test_non_finite_numbers(seeded_store, known_builds, valid_bundle, field, value):
    files = unpack(valid_bundle)
    name = first_records_member(files)
    line = files[name].decode().splitlines()[3]
    record = json.loads(line)
    raw = json.dumps(record).replace(f'"{field}": {json.dumps(record[field])}', f'"{field}": {value}')
    assert value in raw
    data = repack(edit_record(files, line=3, raw=raw))
    assert_rejected(seeded_store, known_builds, data, "line 4", "non-finite")


def test_non_finite_number_in_manifest(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    name = sorted(n for n in files if n.endswith("manifest.json"))[0]
    files[name] = files[name].replace(b'"created_unix_s": 1700000000.0', b'"created_unix_s": NaN')
    assert b"NaN" in files[name]
    assert_rejected(seeded_store, known_builds, repack(files), "manifest.json", "non-finite")


def test_negative_times(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    record = json.loads(files[first_records_member(files)].decode().splitlines()[2])
    backwards = list(record["chunk_ns"])
    backwards[3], backwards[4] = backwards[4], backwards[3]
    cases = [
        ({"chunk_ns": backwards}, "go backwards", "time.order", "chunk_ns[4]"),
        ({"scheduled_ns": -5}, "negative", "record.negative", "scheduled_ns"),
        ({"send_ns": record["scheduled_ns"] - 1}, "before it was scheduled", "time.order", "send_ns"),
        ({"end_ns": record["chunk_ns"][-1] - 1}, "ends before its last chunk", "time.order", "end_ns"),
        ({"chunk_ns": [record["scheduled_ns"] - 10] + record["chunk_ns"][1:]}, "before the request was sent",
         "time.order", "chunk_ns[0]"),
        ({"chunk_tokens": [-1] + record["chunk_tokens"][1:]}, "negative token count", "chunks.negative",
         "chunk_tokens"),
    ]
    for change, fragment, rule, field in cases:
        assert_rejected(seeded_store, known_builds, repack(edit_record(files, line=2, **change)), "line 3", fragment,
                        rule=rule, field=field)


@pytest.mark.parametrize("stats,fragment", [
    ("not an object", "engine_stats must be an object"),
    ({"source": "vllm.metrics", "verify_steps": -3, "accepted_tokens": 2}, "engine_stats.verify_steps"),
    ({"source": "vllm.metrics", "verify_steps": 3, "accepted_tokens": 1.5}, "engine_stats.accepted_tokens"),
    ({"source": "vllm.metrics", "acceptance_histogram": [1, "x"]}, "acceptance_histogram"),
])
def test_malformed_engine_statistics(seeded_store, known_builds, valid_bundle, stats, fragment):
    data = repack(edit_record(unpack(valid_bundle), line=1, engine_stats=stats))
    assert_rejected(seeded_store, known_builds, data, "line 2", fragment)


def test_records_not_matching_the_declared_dataset(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    assert_rejected(seeded_store, known_builds, repack(edit_record(files, line=0, question_id="f" * 32)),
                    "is not a row of", "do not match the declared dataset")
    record = json.loads(files[first_records_member(files)].decode().splitlines()[0])
    other = "math" if record["category"] != "math" else "coding"
    assert_rejected(seeded_store, known_builds, repack(edit_record(files, line=0, category=other)),
                    f"category {other!r}", "declared dataset says")
    for name in [n for n in files if n.endswith("manifest.json")]:
        manifest = json.loads(files[name])
        manifest["dataset_config_sha256"] = "0" * 64
        files = {**files, name: json.dumps(manifest).encode()}
    assert_rejected(seeded_store, known_builds, repack(files), "not a known SPEED-Bench build")


@pytest.mark.parametrize("declared", ["throughput_32k", "throughput_1k"])
def test_declared_config_not_matching_the_dataset_hash(seeded_store, known_builds, valid_bundle, declared):
    files = unpack(valid_bundle)
    name = next(n for n in sorted(files) if n.endswith("manifest.json") and b'"qualitative"' in files[n])
    manifest = json.loads(files[name])
    manifest["dataset_config"] = declared
    assert_rejected(seeded_store, known_builds, repack({**files, name: json.dumps(manifest).encode()}),
                    f"dataset_config {declared!r} does not match the dataset hash", "config 'qualitative'")


def test_duplicate_submissions(seeded_store, known_builds, valid_bundle):
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    assert_rejected(seeded_store, known_builds, valid_bundle, "duplicate submission", entry.id)
    files = unpack(valid_bundle)
    # the same runs re-packed as zip, or with different metadata, are still the same bundle
    assert_rejected(seeded_store, known_builds, as_zip(files), "duplicate submission")
    assert_rejected(seeded_store, known_builds, repack(edit_submission(files, gpu="H200")), "duplicate submission")


@pytest.mark.parametrize("field,value", [
    ("model", "<script>alert(1)</script>"),
    ("drafter", '<img src=x onerror="alert(1)">'),
    ("gpu", "H100 &lt;b&gt;"),
    ("notes", "see javascript:alert(1)"),
    ("sd_method", "eagle3`rm -rf`"),
])
def test_markup_in_free_text_fields(seeded_store, known_builds, valid_bundle, field, value):
    data = repack(edit_submission(unpack(valid_bundle), **{field: value}))
    assert_rejected(seeded_store, known_builds, data, f"metadata.{field}", "plain text")


def test_bad_metadata_values(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    for change, fragment in [({"engine": "unknown-engine"}, "metadata.engine"),
                             ({"draft_length": 2.5}, "draft_length"), ({"draft_length": 0}, "draft_length"),
                             ({"temperature": -1}, "temperature"), ({"model": ""}, "metadata.model is required"),
                             ({"model": "x" * 500}, "longer than"), ({"evil": 1}, "unknown metadata field"),
                             ({"engine": "vllm"}, "measured with engine 'llamacpp'")]:
        assert_rejected(seeded_store, known_builds, repack(edit_submission(files, **change)), fragment)


@pytest.mark.parametrize("name", ["../evil.json", "/etc/evil.json", "runs/../../evil.json", "C:/evil.json",
                                  "runs\\..\\evil.json"])
def test_path_traversal_member_names(seeded_store, known_builds, valid_bundle, name):
    files = unpack(valid_bundle)
    files[name] = b"{}"
    msg = assert_rejected(seeded_store, known_builds, repack(files), "archive member")
    assert "path traversal" in msg or "backslashes" in msg
    if "\\" not in name:
        assert_rejected(seeded_store, known_builds, as_zip(files), "archive member")


def test_links_and_devices_are_refused(seeded_store, known_builds, valid_bundle):
    link = tarfile.TarInfo("runs/link.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    assert_rejected(seeded_store, known_builds, repack(unpack(valid_bundle), [link]), "link or special file")
    fifo = tarfile.TarInfo("runs/fifo.json")
    fifo.type = tarfile.FIFOTYPE
    assert_rejected(seeded_store, known_builds, repack(unpack(valid_bundle), [fifo]), "link or special file")


@pytest.mark.parametrize("name", ["runs/model.pkl", "exploit.py", "runs/q/records.npy", "weights.bin"])
def test_only_json_members_are_accepted(seeded_store, known_builds, valid_bundle, name):
    import pickle

    files = unpack(valid_bundle)
    files[name] = pickle.dumps({"never": "loaded"})
    assert_rejected(seeded_store, known_builds, repack(files), name, "only .json and .jsonl")


def test_members_outside_the_listed_runs(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    files["runs/unlisted/records.jsonl"] = b"{}\n"
    assert_rejected(seeded_store, known_builds, repack(files), "not part of any run listed")


def test_missing_pieces(seeded_store, known_builds, valid_bundle):
    files = unpack(valid_bundle)
    no_submission = {k: v for k, v in files.items() if k != "submission.json"}
    assert_rejected(seeded_store, known_builds, repack(no_submission), "no submission.json")
    name = first_records_member(files)
    assert_rejected(seeded_store, known_builds, repack({k: v for k, v in files.items() if k != name}),
                    "has no records.jsonl")
    assert_rejected(seeded_store, known_builds, repack({**files, name: b"{not json\n"}), "line 1", "invalid JSON")
    assert_rejected(seeded_store, known_builds, repack({**files, name: b"\xff\xfe\n"}), "not UTF-8")


def test_read_archive_accepts_zip_and_tar_alike(valid_bundle):
    files = unpack(valid_bundle)
    assert read_archive(as_zip(files)) == read_archive(valid_bundle) == files


def test_what_needs_only_the_manifest_or_one_record_is_checked_before_the_rest_is_read(seeded_store, known_builds,
                                                                                     valid_bundle):
    """Cheap checks first: a run on an unknown build or another engine is refused at its manifest,
    and a record that is not a row of the declared config at its own line (naming it), before any
    later line is parsed: a hostile upload stops there, not after a full parse (the third line
    here is not even JSON, and was the error reported)."""
    files = edit_record(unpack(valid_bundle), line=2, raw="{not json")
    name = first_records_member(files)
    assert_rejected(seeded_store, known_builds, repack(edit_record(files, line=0, question_id="f" * 32)),
                    f"{name} line 1", "is not a row of", rule="build.unknown_question", field="question_id")
    assert_rejected(seeded_store, known_builds, repack(edit_record(files, line=1, category="no-such")),
                    f"{name} line 2", "declared dataset says", rule="build.category_mismatch", field="category")
    manifest_name = name.replace("records.jsonl", "manifest.json")
    for change, rule in (({"dataset_config_sha256": "0" * 64}, "build.unknown"), ({"engine": "sglang"}, "run.engine")):
        manifest = {**json.loads(files[manifest_name]), **change}
        assert_rejected(seeded_store, known_builds, repack({**files, manifest_name: json.dumps(manifest).encode()}),
                        manifest_name, rule=rule)
