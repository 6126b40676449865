"""A corpus of hostile bundles, written here: each is refused by the exact rule it breaks, and the
store is left exactly as it was (issue 11). Record attacks edit one record of a valid entry whose
records carry the engine's statistics (K = 3)."""
from __future__ import annotations

import json

import pytest

from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.runs import RunCaps
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import parse_bundle, submit_bundle

META = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "EAGLE3-LLaMA3.3-Instruct-70B", "sd_method": "eagle3",
        "engine": "vllm", "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}


def edit_one(B, bundle: bytes, run: str = "qual", index: int = 2, **changes) -> bytes:
    files = B.unpack(bundle)
    rows = B.records(files, run)
    rows[index] = {**rows[index], **changes}
    return B.repack(B.with_records(files, run, rows))


def stats_of(B, bundle: bytes, index: int = 2) -> dict:
    return B.records(B.unpack(bundle), "qual")[index]


# --- engine statistics against K, the chunks and each other -------------------------------------

def test_engine_k_differs_from_metadata_k(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    data = edit_one(bundles, stats_bundle, engine_stats={**r["engine_stats"], "draft_length": 5})
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.k_mismatch", "engine_stats.draft_length", "line 3")


def test_histogram_wider_than_k(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    steps = r["engine_stats"]["verify_steps"]
    wide = [0] * 999 + [steps]  # "AL 1000" with K = 3
    data = edit_one(bundles, stats_bundle, engine_stats={**r["engine_stats"], "acceptance_histogram": wide})
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.histogram_width", "engine_stats.acceptance_histogram")


def test_a_trillion_accepted_tokens_in_one_step(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    stats = {**r["engine_stats"], "verify_steps": 1, "accepted_tokens": 10**12, "draft_tokens": 3,
             "acceptance_histogram": None}
    data = edit_one(bundles, stats_bundle, engine_stats=stats)
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.accepted_exceeds_drafted",
                            "engine_stats.accepted_tokens")


def test_drafted_tokens_beyond_steps_times_k(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    stats = {**r["engine_stats"], "draft_tokens": 3 * r["engine_stats"]["verify_steps"] + 5}
    data = edit_one(bundles, stats_bundle, engine_stats=stats)
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.drafted_vs_steps", "engine_stats.draft_tokens")


def test_histogram_disagrees_with_the_counts(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    hist = list(r["engine_stats"]["acceptance_histogram"])
    hist[0], hist[3] = hist[0] - 1, hist[3] + 1  # same steps, 3 more accepted than counted
    data = edit_one(bundles, stats_bundle, engine_stats={**r["engine_stats"], "acceptance_histogram": hist})
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.histogram_counts",
                            "engine_stats.acceptance_histogram")


def _single_token_chunks(r: dict) -> dict:
    n = r["output_tokens"]
    start = r["chunk_ns"][0]
    return {"chunk_tokens": [1] * n, "chunk_ns": [start + i * 20_000_000 for i in range(n)],
            "end_ns": start + n * 20_000_000}


def test_statistics_claim_fewer_steps_than_were_streamed(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    n = r["output_tokens"]  # 64 single-token steps streamed; the statistics claim 21 steps of 3 tokens
    stats = {"source": "vllm.metrics", "verify_steps": 21, "drafted_steps": 21, "decode_steps": 21,
             "draft_tokens": 63, "accepted_tokens": n - 1 - 21, "acceptance_histogram": None, "draft_length": 3}
    data = edit_one(bundles, stats_bundle, engine_stats=stats, **_single_token_chunks(r))
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.chunks_disagree", "chunk_tokens")


def test_statistics_that_do_not_add_up_to_the_output(seeded_store, known_builds, stats_bundle, bundles):
    r = stats_of(bundles, stats_bundle)
    stats = {"source": "vllm.metrics", "verify_steps": 30, "drafted_steps": 30, "decode_steps": 30,
             "draft_tokens": 90, "accepted_tokens": 42, "acceptance_histogram": None, "draft_length": 3}
    data = edit_one(bundles, stats_bundle, engine_stats=stats)  # 1 + 30 + 42 = 73 tokens, 64 were emitted
    bundles.assert_rejected(seeded_store, known_builds, data, "stats.steps_vs_output", "engine_stats.decode_steps")


@pytest.mark.parametrize("output_tokens", [71, 10**15])
def test_output_tokens_that_are_not_the_chunks(seeded_store, known_builds, stats_bundle, bundles, output_tokens):
    data = edit_one(bundles, stats_bundle, output_tokens=output_tokens)
    bundles.assert_rejected(seeded_store, known_builds, data, "chunks.sum", "output_tokens")


def test_a_step_larger_than_k_plus_one(seeded_store, known_builds, valid_bundle, bundles):
    r = bundles.records(bundles.unpack(valid_bundle), "qual")[2]
    tokens = list(r["chunk_tokens"])
    tokens[2], tokens[3] = tokens[2] + tokens[3], 0  # one "step" of up to 8 tokens with K = 3
    if tokens[2] <= 4:
        tokens[2], tokens[4] = tokens[2] + tokens[4], 0
    data = edit_one(bundles, valid_bundle, chunk_tokens=tokens)
    bundles.assert_rejected(seeded_store, known_builds, data, "chunks.step_size", "chunk_tokens[2]")


# --- physical bounds and time ----------------------------------------------------------------------

def test_one_nanosecond_steps(seeded_store, known_builds, valid_bundle, bundles):
    r = bundles.records(bundles.unpack(valid_bundle), "tp1k")[0]
    first = r["chunk_ns"][0]
    # sent 1 ns before its first chunk: every token within nanoseconds of the send (the bound counts
    # from the send, since a burst of delivery may squeeze chunk stamps together but not the send)
    data = edit_one(bundles, valid_bundle, run="tp1k", index=0, chunk_ns=[first + i for i in range(len(r["chunk_ns"]))],
                    end_ns=first + len(r["chunk_ns"]), send_ns=first - 1)
    bundles.assert_rejected(seeded_store, known_builds, data, "bounds.user_tps", "chunk_ns")


@pytest.mark.parametrize("changes,rule,field", [
    ({"num_turns": 1000}, "bounds.turns", "turn_index"),
    ({"prompt_tokens": 0}, "bounds.prompt_tokens", "prompt_tokens"),
    ({"prompt_tokens": 10**9}, "bounds.prompt_tokens", "prompt_tokens"),
])
def test_per_request_bounds(seeded_store, known_builds, valid_bundle, bundles, changes, rule, field):
    bundles.assert_rejected(seeded_store, known_builds, edit_one(bundles, valid_bundle, **changes), rule, field)


def test_a_request_lasting_five_hours(seeded_store, known_builds, valid_bundle, bundles):
    r = bundles.records(bundles.unpack(valid_bundle), "qual")[2]
    data = edit_one(bundles, valid_bundle, end_ns=r["scheduled_ns"] + 5 * 3600 * 10**9)
    bundles.assert_rejected(seeded_store, known_builds, data, "bounds.duration", "end_ns")


# --- what a run must cover -------------------------------------------------------------------------

def test_one_prompt_of_the_config(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    data = bundles.repack(bundles.with_records(files, "qual", bundles.records(files, "qual")[:1]))
    bundles.assert_rejected(seeded_store, known_builds, data, "coverage.prompts", "question_id", "1 of the config's 55")


def test_most_requests_marked_as_errors(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    rows = [{**r, "error": "boom", "error_kind": "http_5xx"} if i % 10 else r for i, r in enumerate(rows)]
    data = bundles.repack(bundles.with_records(files, "qual", rows))
    bundles.assert_rejected(seeded_store, known_builds, data, "coverage.errors", "error")


def test_a_multi_turn_prompt_missing_a_turn(seeded_store, known_builds, valid_bundle, bundles):
    bundles.assert_rejected(seeded_store, known_builds, edit_one(bundles, valid_bundle, num_turns=2),
                            "coverage.turns", "turn_index")


def test_prompts_too_short_for_the_isl_bucket(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = [{**r, "prompt_tokens": 5} for r in bundles.records(files, "tp1k")]
    data = bundles.repack(bundles.with_records(files, "tp1k", rows))
    bundles.assert_rejected(seeded_store, known_builds, data, "isl.bucket", "prompt_tokens", "1000-token bucket")


def test_every_step_accepting_every_draft(seeded_store, known_builds, make_entry_runs, bundles):
    sd, _ = make_entry_runs(SimulatedEngine(rates=(1.0, 1.0, 1.0)), seed=801, throughput=False)
    bundles.assert_rejected(seeded_store, known_builds, pack_bundle(sd, META), "acceptance.perfect", "chunk_tokens")


# --- baselines ------------------------------------------------------------------------------------

def test_baseline_carrying_drafted_tokens(seeded_store, known_builds, stats_bundle, bundles):
    stats = {"source": "vllm.metrics", "verify_steps": 60, "draft_tokens": 12, "accepted_tokens": 3}
    data = edit_one(bundles, stats_bundle, run="baseline-tp1k-ar", index=0, engine_stats=stats)
    bundles.assert_rejected(seeded_store, known_builds, data, "baseline.drafted", "engine_stats")


def test_baseline_that_is_the_sd_run_itself(seeded_store, known_builds, make_entry_runs, bundles):
    sd, _ = make_entry_runs(SimulatedEngine(rates=(0.7, 0.5, 0.3)), seed=811)
    bundles.assert_rejected(seeded_store, known_builds, pack_bundle(sd, META, [sd[1]]), "baseline.drafted",
                            None, "at most K + 1 = 1")


def test_baseline_records_identical_to_an_sd_run(seeded_store, known_builds, make_entry_runs, bundles):
    ar = SimulatedEngine(speculative=False)
    sd, _ = make_entry_runs(ar, seed=821)  # an "SD" run that never accepts anything, then itself as baseline
    bundles.assert_rejected(seeded_store, known_builds, pack_bundle(sd, META, [sd[1]]), "baseline.same_as_sd")


def test_speedup_above_k_plus_one(seeded_store, known_builds, make_entry_runs, dataset_dir, bundles):
    from speedbench.leaderboard.synthetic import make_run

    sd, baselines = make_entry_runs(SimulatedEngine(rates=(0.8, 0.7, 0.6)), seed=831)
    slow = SimulatedEngine(speculative=False, step_time_s=0.3)  # each baseline step 15x an SD step
    slow_dir = make_run(baselines[0].with_name("slow-ar"), dataset_dir, "throughput_1k", slow, concurrencies=(1, 4),
                        seed=832)
    bundles.assert_rejected(seeded_store, known_builds, pack_bundle(sd, META, [slow_dir]), "speedup.above_k_plus_1")


# --- caps on CPU -----------------------------------------------------------------------------------

def test_thousands_of_load_points(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    r = bundles.records(files, "tp1k")[0]
    rows = [{**r, "run_point": f"c{i}", "requested_concurrency": i, "record_key": f"c{i}/{r['question_id']}/0"}
            for i in range(1, 8001)]
    data = bundles.repack(bundles.with_records(files, "tp1k", rows))
    bundles.assert_rejected(seeded_store, known_builds, data, "caps.points_per_run", "run_point", "line 17")


def test_too_many_runs_in_a_bundle(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    runs = [{"path": f"runs/r{i}", "role": "sd"} for i in range(17)]
    bundles.assert_rejected(seeded_store, known_builds, bundles.repack(bundles.edit_submission(files, runs=runs)),
                            "caps.runs_per_bundle")


def test_record_and_json_size_caps(known_builds, valid_bundle):
    from speedbench.leaderboard.schema import BundleRejected

    with pytest.raises(BundleRejected) as caught:
        parse_bundle(valid_bundle, known_builds, caps=RunCaps(max_records=10))
    assert caught.value.rule == "caps.records_per_run"
    with pytest.raises(BundleRejected) as caught:
        parse_bundle(valid_bundle, known_builds, caps=RunCaps(max_json_bytes=100))
    assert caught.value.rule == "caps.json_size"
    with pytest.raises(BundleRejected) as caught:
        parse_bundle(valid_bundle, known_builds, ArchiveLimits(max_line_bytes=1000))
    assert caught.value.rule == "json.line_too_long" and "line 1" in str(caught.value)


# --- the archive ------------------------------------------------------------------------------------

def test_gzip_missing_its_last_ten_bytes(seeded_store, known_builds, valid_bundle, bundles):
    bundles.assert_rejected(seeded_store, known_builds, valid_bundle[:-10], "archive.truncated", None, "trailer")


@pytest.mark.parametrize("offset,fragment", [(-8, "CRC-32"), (-2, "length")])
def test_gzip_trailer_that_does_not_match(seeded_store, known_builds, valid_bundle, bundles, offset, fragment):
    data = bytearray(valid_bundle)
    data[offset] ^= 0xFF
    bundles.assert_rejected(seeded_store, known_builds, bytes(data), "archive.corrupt", None, fragment)


def test_data_after_the_gzip_stream(seeded_store, known_builds, valid_bundle, bundles):
    bundles.assert_rejected(seeded_store, known_builds, valid_bundle + b"\x00trailing", "archive.corrupt")


@pytest.mark.parametrize("name,content", [
    ("results-extra.json", b"\x7fELF\x02\x01\x01" + bytes(200)),
    ("blob.json", bytes(range(256)) * 4096),  # 1 MiB of binary, never read
    ("counters.jsonl", b"{}\n"),
])
def test_files_a_run_folder_does_not_hold(seeded_store, known_builds, valid_bundle, bundles, name, content):
    files = bundles.unpack(valid_bundle)
    run_dir = bundles.member(files, "qual").rsplit("/", 1)[0]
    files[f"{run_dir}/{name}"] = content
    bundles.assert_rejected(seeded_store, known_builds, bundles.repack(files), "archive.unexpected_member")


def test_markdown_image_in_a_member_name(seeded_store, known_builds, valid_bundle, bundles):
    files = {**bundles.unpack(valid_bundle), "runs/![x](http://127.0.0.1:9/p.png).json": b"{}"}
    error = bundles.assert_rejected(seeded_store, known_builds, bundles.repack(files), "archive.name")
    assert "![x](http://127.0.0.1:9/p.png)" in str(error)  # quoted as text, and the UI shows it as text


def test_duplicate_record_keys(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    data = bundles.repack(bundles.with_records(files, "qual", rows + rows[:1]))
    bundles.assert_rejected(seeded_store, known_builds, data, "record.duplicate_key", "record_key")


# --- JSON that breaks parsers --------------------------------------------------------------------------

def test_an_integer_past_64_bits(seeded_store, known_builds, valid_bundle, bundles):
    r = bundles.records(bundles.unpack(valid_bundle), "qual")[2]
    tokens = list(r["chunk_tokens"])
    tokens[3] = 2**70
    bundles.assert_rejected(seeded_store, known_builds, edit_one(bundles, valid_bundle, chunk_tokens=tokens),
                            "json.int_range", "chunk_tokens[3]", "line 3")


@pytest.mark.parametrize("depth", [40, 100_000])
def test_deep_nesting(seeded_store, known_builds, valid_bundle, bundles, depth):
    files = bundles.unpack(valid_bundle)
    name = bundles.member(files, "qual", "results.json")
    files[name] = b'{"a": ' + b"[" * depth + b"]" * depth + b"}"
    bundles.assert_rejected(seeded_store, known_builds, bundles.repack(files), "json.nesting", None, "results.json")


def test_duplicate_json_keys(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    rows = [json.dumps(r) for r in bundles.records(files, "qual")]
    rows[4] = rows[4][:-1] + ', "output_tokens": 1}'  # last one would win
    data = bundles.repack(bundles.with_records(files, "qual", rows))
    bundles.assert_rejected(seeded_store, known_builds, data, "json.duplicate_key", "output_tokens", "line 5")


def test_lone_surrogate_in_the_model_name(seeded_store, known_builds, valid_bundle, bundles):
    files = bundles.unpack(valid_bundle)
    doc = json.loads(files["submission.json"])
    doc["metadata"]["model"] = "\ud800"
    raw = json.dumps(doc).encode()  # ensure_ascii writes the escape "\ud800"
    assert b"\\ud800" in raw
    bundles.assert_rejected(seeded_store, known_builds, bundles.repack({**files, "submission.json": raw}),
                            "json.surrogate", "metadata.model", "submission.json")


def test_lone_surrogate_in_a_record(seeded_store, known_builds, valid_bundle, bundles):
    bundles.assert_rejected(seeded_store, known_builds, edit_one(bundles, valid_bundle, sub_category="x\udc00"),
                            "json.surrogate", "sub_category", "line 3")


# --- text that could mislead ----------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("model", "Llama\u202e3.3"),           # right-to-left override
    ("drafter", "EAGLE\u2066x\u2069"),      # bidi isolate
    ("gpu", "H\u200b100"),                  # zero-width space
    ("engine_version", "0.11\u200d"),       # zero-width joiner
    ("notes", "line one\nline two"),        # newline
    ("submitter", "tab\there"),             # tab
    ("model_family", "llama\x85"),          # NEL
    ("sd_method", "\ufeffeagle3"),          # byte-order mark
    ("model", "=HYPERLINK(\"http://x\")"),  # spreadsheet formulas
    ("drafter", "+1"), ("gpu", "-2"), ("notes", "@SUM(A1)"),
])
def test_misleading_text(seeded_store, known_builds, valid_bundle, bundles, field, value):
    data = bundles.repack(bundles.edit_submission(bundles.unpack(valid_bundle), **{field: value}))
    error = bundles.assert_rejected(seeded_store, known_builds, data, "text.unsafe", f"metadata.{field}")
    assert value not in str(error)  # the message never carries the text it refuses


# --- duplicates by what was measured --------------------------------------------------------------------

def _shifted(rows: list[dict], ns: int) -> list[dict]:
    out = []
    for r in rows:
        out.append({**r, "scheduled_ns": r["scheduled_ns"] + ns, "send_ns": r["send_ns"] + ns,
                    "end_ns": r["end_ns"] + ns, "chunk_ns": [t + ns for t in r["chunk_ns"]]})
    return out


def test_the_same_measurement_repackaged_is_a_duplicate(seeded_store, known_builds, valid_bundle, bundles):
    entry = submit_bundle(valid_bundle, seeded_store, known_builds)
    files = bundles.unpack(valid_bundle)
    qual = bundles.member(files, "qual")
    results = bundles.member(files, "qual", "results.json")
    renamed = {k.replace("runs/qual/", "runs/renamed/"): v for k, v in files.items()}
    doc = json.loads(renamed["submission.json"])
    doc["runs"] = [{**r, "path": r["path"].replace("runs/qual", "runs/renamed")} for r in doc["runs"]]
    renamed["submission.json"] = json.dumps(doc).encode()
    variants = {
        "results.json edited": {**files, results: b'{"acceptance_length": 99}'},
        "run folder renamed": renamed,
        "trailing newline": {**files, qual: files[qual] + b"\n\n"},
        "reformatted": {**files, qual: "".join(json.dumps(r, indent=None, separators=(", ", ": ")) + "\n"
                                               for r in bundles.records(files, "qual")).encode()},
        "lines reordered": bundles.with_records(files, "qual", bundles.records(files, "qual")[::-1]),
        "times shifted by 7 ns": bundles.with_records(files, "qual", _shifted(bundles.records(files, "qual"), 7)),
        "other metadata": bundles.edit_submission(files, gpu="H200", notes="again"),
    }
    for what, variant in variants.items():
        error = bundles.assert_rejected(seeded_store, known_builds, bundles.repack(variant), "duplicate.measurement")
        assert entry.id in str(error), what
    bundles.assert_rejected(seeded_store, known_builds, bundles.as_zip(files), "duplicate.measurement")


def test_a_changed_measurement_is_new_but_flagged(seeded_store, known_builds, valid_bundle, bundles):
    first = submit_bundle(valid_bundle, seeded_store, known_builds)
    files = bundles.unpack(valid_bundle)
    rows = bundles.records(files, "qual")
    rows[0] = {**rows[0], "end_ns": rows[0]["end_ns"] + 1}  # one time differs by 1 ns: not the same measurement
    second = submit_bundle(bundles.repack(bundles.with_records(files, "qual", rows)), seeded_store, known_builds)
    assert second.id != first.id
    assert {"code": "duplicate.tokens", "message": f"the same token streams as entry {first.id}"} in second.warnings
