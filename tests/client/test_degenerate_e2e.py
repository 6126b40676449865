"""The degenerate-speculation guard on the real llama.cpp server (stories260K): synthetic acceptance with
every draft accepted is flagged ``acceptance_pinned`` (and said to be expected); a normal draft-model
run is not flagged pinned. Each request's pinned state is recomputed here from the server's own timings."""
from __future__ import annotations

import json

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = 4


def _serve_and_run(models_dir, tmp_path, name: str, **config):
    from speedbench.engine import EngineConfig, LocalEngine

    dataset = write_dataset(tmp_path / "dataset", story_rows(6))
    out = tmp_path / name
    with LocalEngine(EngineConfig(target=str(models_dir / "stories260K-f32.gguf"), draft_length=K, n_parallel=2,
                                  n_ctx_per_slot=512, **config)) as engine:
        code = run_cli("llamacpp", engine.url, dataset, out, models_dir, "--concurrency", "2",
                       "--max-tokens", "96", "--draft-length", str(K))
        (out / "engine.json").write_text(json.dumps(engine.describe()))  # as `speedbench serve` describes it
    assert code == 0
    return out


def _pinned_by_hand(out) -> tuple[int, int]:
    """(requests pinned, requests judged) from llama.cpp's timings: >= 8 decode steps, all drafts accepted or none."""
    pinned = judged = 0
    for record in read_jsonl(out / "records.jsonl"):
        if record["warmup"] or record["error"]:
            continue
        timings = record["engine_stats"]["raw"]
        drafted, accepted = timings.get("draft_n", 0), timings.get("draft_n_accepted", 0)
        steps = timings["predicted_n"] - accepted - 1  # decode steps after the prefill's token
        if steps >= 8 and drafted > 0:
            judged += 1
            pinned += accepted == drafted or accepted == 0
    return pinned, judged


def test_synthetic_all_accepted_is_flagged_pinned(models_dir, tmp_path):
    from speedbench.analysis.run_results import compute_results

    out = _serve_and_run(models_dir, tmp_path, "synthetic", draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                         speculation="synthetic", synthetic_rates=[1.0] * K)
    pinned, judged = _pinned_by_hand(out)
    assert judged > 0 and pinned == judged
    [point] = compute_results(out, num_resamples=0)["points"]
    assert (point["degenerate"]["overall"]["pinned_all"] + point["degenerate"]["overall"]["pinned_none"],
            point["degenerate"]["overall"]["pin_judged"]) == (pinned, judged)
    [flag] = [f for f in point["flags"] if f.startswith("acceptance_pinned")]
    assert "expected: this run's acceptance is synthetic" in flag


def test_normal_draft_run_is_not_flagged_pinned(models_dir, tmp_path):
    from speedbench.analysis.run_results import compute_results

    out = _serve_and_run(models_dir, tmp_path, "draft", draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                         speculation="draft")
    pinned, judged = _pinned_by_hand(out)
    assert judged > 0 and pinned <= 0.2 * judged  # by hand, the share the flag needs is not reached
    [point] = compute_results(out, num_resamples=0)["points"]
    overall = point["degenerate"]["overall"]
    assert (overall["pinned_all"] + overall["pinned_none"], overall["pin_judged"]) == (pinned, judged)
    assert not [f for f in point["flags"] if f.startswith("acceptance_pinned")], point["flags"]


def test_pinned_flag_reaches_the_report_and_the_board(models_dir, tmp_path):
    """The same warning in the report's flags table and as a board warning (never a refusal)."""
    from speedbench.leaderboard.plausibility import degenerate_warnings
    from speedbench.report.compute import compute_report
    from speedbench.analysis.run_folder import read_run_folder

    out = _serve_and_run(models_dir, tmp_path, "synthetic", draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                         speculation="synthetic", synthetic_rates=[1.0] * K)
    report = compute_report([read_run_folder(out)])
    assert [row["point"] for row in report.flags if row["flag"] == "acceptance_pinned"] == ["c2"]
    warnings = degenerate_warnings([read_run_folder(out, role="sd")])
    assert [w["code"] for w in warnings if w["code"] == "acceptance_pinned"] == ["acceptance_pinned"]
    assert degenerate_warnings([read_run_folder(out, role="baseline")]) == []  # only SD runs are judged
