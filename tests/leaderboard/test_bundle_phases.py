"""Per-phase AL on the board: an optional submission field (the phase boundary's token ids); the
board splits the records itself. Bundles without the field stay valid and get no phase columns."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
import sys
from pathlib import Path

import pytest

from speedbench.leaderboard import board
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.schema import SubmissionMetadata, parse_metadata
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine
from speedbench.leaderboard.validate import submit_bundle

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"
META = {"model": "Qwen/Qwen3-8B", "drafter": "phase drafter", "sd_method": "eagle3", "engine": "vllm",
        "engine_version": "0.11.0", "gpu": "B200", "draft_length": 3, "temperature": 0.0}
THINK_END = 151668


@pytest.fixture
def qualitative(make_entry_runs, tmp_path) -> Path:
    """A fresh SD qualitative run (simulated, K = 3) whose records carry engine ids with
    </think> at token 20 (ids 7 elsewhere)."""
    sd, _ = make_entry_runs(SimulatedEngine(rates=(0.9, 0.5, 0.3)), seed=1606, throughput=False)
    run = tmp_path / "qual"
    shutil.copytree(sd[0], run)
    path = run / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        ids = [7] * row["output_tokens"]
        ids[20] = THINK_END
        row.update(output_token_ids=ids, output_token_ids_source="engine")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def hand_al(run: Path, answer_start: int = 21, k: int = 3) -> dict[str, float]:
    """Per-phase AL the long way: per record drop the lone prefill chunk and the last chunk, give
    each remaining chunk to the phase of its first token, AL = 1 + accepted / steps."""
    steps = {"thinking": [0, 0], "answer": [0, 0]}
    for line in (run / "records.jsonl").read_text().splitlines():
        sizes = json.loads(line)["chunk_tokens"]
        offset, kept = 0, []
        for i, size in enumerate(sizes):
            if not (i == 0 and size == 1) and i != len(sizes) - 1 and size <= k + 1:
                kept.append((offset, size))
            offset += size
        for start, size in kept:
            phase = "answer" if start >= answer_start else "thinking"
            steps[phase][0] += 1
            steps[phase][1] += size - 1
    return {phase: 1 + accepted / n for phase, (n, accepted) in steps.items() if n}


@pytest.fixture
def store(tmp_path):
    store = LeaderboardStore(tmp_path / "board.sqlite3")
    yield store
    store.close()


def test_submitted_boundary_gives_per_phase_al(qualitative, store, known_builds):
    entry = submit_bundle(pack_bundle([qualitative], {**META, "phase_boundary_ids": [THINK_END]}), store, known_builds)
    phases = entry.metrics["phases"]
    expected = hand_al(qualitative)
    assert phases["markers"]["boundary_ids"] == [THINK_END] and phases["rules"] == {"boundary": phases["num_split"]}
    assert phases["num_split"] == phases["num_records"] > 0
    for name in ("thinking", "answer"):
        assert phases["phases"][name]["acceptance_length"] == pytest.approx(expected[name])
        assert phases["phases"][name]["source"] == "chunks"
    assert phases["phases"]["thinking"]["num_tokens"] == 21 * phases["num_split"]
    row = board.entry_row(store.get(entry.id))
    assert row["al_thinking"] == round(expected["thinking"], 3) and row["al_answer"] == round(expected["answer"], 3)
    assert row["al_thinking_ci_low"] <= row["al_thinking"] <= row["al_thinking_ci_high"]
    assert board.phase_columns([row]) == ["al_thinking", "al_answer"]
    assert store.get(entry.id).metadata["phase_boundary_ids"] == [THINK_END]

    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import about, populate

    assert "AL thinking" in about.ABOUT and "spans the boundary counts" in about.ABOUT
    frame, datatypes, _ = populate.board_frame(populate.all_rows(store))
    assert frame["AL thinking"].tolist() == [row["al_thinking"]] and frame["AL answer"].tolist() == [row["al_answer"]]
    assert datatypes[frame.columns.get_loc("AL thinking")] == "number"


def test_bundles_without_the_field_stay_valid(qualitative, store, known_builds):
    entry = submit_bundle(pack_bundle([qualitative], META), store, known_builds)
    assert "phases" not in entry.metrics
    row = board.entry_row(entry)
    assert "al_thinking" not in row and board.phase_columns([row]) == []
    # packing without the field writes no phase keys, so such bundles keep their bytes
    assert "phase_boundary_ids" not in parse_metadata(META).to_dict()
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import populate

    frame, _, _ = populate.board_frame(populate.all_rows(store))
    assert "AL thinking" not in frame.columns


def test_prompt_state_closed_makes_everything_answer(qualitative, store, known_builds):
    meta = {**META, "phase_boundary_ids": [THINK_END], "phase_prompt_state": "closed"}
    phases = submit_bundle(pack_bundle([qualitative], meta), store, known_builds).metrics["phases"]
    assert phases["phases"]["thinking"]["num_tokens"] == 0 and phases["thinking_token_share"] == 0.0
    assert phases["phases"]["answer"]["acceptance_length"] == pytest.approx(hand_al(qualitative, answer_start=0)["answer"])


@pytest.mark.parametrize("changes", [
    {"phase_boundary_ids": []}, {"phase_boundary_ids": "151668"}, {"phase_boundary_ids": [-1]},
    {"phase_boundary_ids": [1.5]}, {"phase_boundary_ids": [True]}, {"phase_boundary_ids": [2**31]},
    {"phase_boundary_ids": list(range(17))}, {"phase_prompt_state": "open"},
    {"phase_boundary_ids": [1], "phase_prompt_state": "half"},
])
def test_bad_phase_fields_are_rejected_naming_the_field(qualitative, store, known_builds, bundles, changes):
    bundle = pack_bundle([qualitative], META)
    files = bundles.edit_submission(bundles.unpack(bundle), metadata={**META, **changes})
    field = "phase_boundary_ids" if "phase_boundary_ids" in changes and len(changes) == 1 else "phase_prompt_state"
    bundles.assert_rejected(store, known_builds, bundles.repack(files), "submission.phase_boundary",
                            f"metadata.{field}", "submission.json")


def test_metadata_round_trip():
    meta = parse_metadata({**META, "phase_boundary_ids": [200005, 17, 200008], "phase_prompt_state": "none"})
    assert meta.phase_boundary_ids == (200005, 17, 200008)
    assert parse_metadata(meta.to_dict()) == meta
    assert SubmissionMetadata(**{**META}).to_dict().keys() == parse_metadata(META).to_dict().keys()


def test_submit_flags_write_the_field(qualitative, known_builds_dir, monkeypatch, capsys, tmp_path):
    from speedbench.cli import main

    monkeypatch.setenv("SPEEDBENCH_KNOWN_BUILDS", str(known_builds_dir))
    out = tmp_path / "bundle.tar.gz"
    args = ["submit", str(qualitative), "--dry-run", "--out", str(out), "--drafter", "d", "--method", "eagle3",
            "--gpu", "H100", "--phase-boundary-ids", str(THINK_END)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    expected = hand_al(qualitative)
    num_records = len((qualitative / "records.jsonl").read_text().splitlines())
    assert f"phase thinking  {21 * num_records} tokens, AL {expected['thinking']:.3f}" in printed
    assert f"AL {expected['answer']:.3f}" in printed
    with tarfile.open(fileobj=io.BytesIO(out.read_bytes()), mode="r:gz") as tar:
        document = json.loads(tar.extractfile("submission.json").read())
    assert document["metadata"]["phase_boundary_ids"] == [THINK_END]
    assert "phase_prompt_state" not in document["metadata"]
    with pytest.raises(SystemExit, match="--phase-boundary-ids"):
        main(args[:-1] + ["1,x"])
    with pytest.raises(SystemExit, match="needs --phase-boundary-ids"):
        main(args[:-2] + ["--phase-prompt-state", "open"])
