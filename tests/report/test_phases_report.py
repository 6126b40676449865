"""The report's thinking-vs-answer section: hand-computed per-phase numbers, detection and the CLI flags."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tokenizers import AddedToken, Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from speedbench.cli import main
from speedbench.records import EngineSpecStats, RunManifest, TurnRecord
from speedbench.report import ReportOptions, build_report

MS = 1_000_000


def think_run(path: Path, close_id: int, tokenizer_path: str, engine_detail: bool = False) -> Path:
    """Four requests, K = 3: chunks 1 | 3 | 3 | 2 | 2 | 1 every 10 ms, </think> at index 5 (e = 6).

    Offsets 0, 1, 4, 7, 9, 11: the chunk at offset 4 (tokens 4..6) spans the boundary and is
    thinking. Trimmed as a whole stream (lone prefill and last chunk out): thinking steps 3, 3
    (AL 3.0), answer steps 2, 2 (AL 2.0). Latency: thinking gaps 10 + 10 ms for 6 tokens
    (300 tokens/s), answer gaps 10 + 10 + 10 ms for 2 + 2 + 1 tokens (166.67 tokens/s).
    ``engine_detail``: vLLM-style per-step accepted counts 2, 2, 1, 1, 0 (the same steps).
    """
    path.mkdir(parents=True)
    manifest = RunManifest(
        engine="vllm", url="http://127.0.0.1:1", model_id="thinker", engine_version="vllm 0.32.0", server={},
        dataset_dir="speed-bench", dataset_config="qualitative", dataset_config_sha256="ab" * 32,
        dataset_manifest_sha256="", num_rows=4, tokenizer_path=tokenizer_path, tokenizer_sha256="cd" * 32,
        chat_template=True, prompt_mode="chat", options={}, client_version="test", python_version="3.11",
        created_unix_s=1.8e9)
    (path / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    (path / "engine.json").write_text(json.dumps({"speculation": "draft", "draft_length": 3}))
    ids = [1] * 12
    ids[5] = close_id
    with open(path / "records.jsonl", "w") as handle:
        for n in range(4):
            start = 10**12 + n * 10**9
            times = [start + (100 + 10 * i) * MS for i in range(6)]
            record = TurnRecord(
                record_key=f"c1/q{n}/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                request_rate=None, question_id=f"q{n}", category=("math", "coding")[n % 2], sub_category="",
                turn_index=0, num_turns=1, warmup=False, worker=0, prompt_tokens=7, prompt_sha256="0" * 64,
                scheduled_ns=start, send_ns=start, end_ns=times[-1], started_unix_s=1.8e9, chunk_ns=times,
                chunk_tokens=[1, 3, 3, 2, 2, 1], chunks_are_steps=True, output_tokens=12, finish_reason="stop",
                output_token_ids=ids, output_token_ids_source="engine",
                engine_stats=EngineSpecStats(source="vllm.metrics", draft_length=3, accepted_tokens=6,
                                             drafted_steps=5, draft_tokens=15, acceptance_histogram=[1, 2, 2, 0],
                                             raw={"per_step_accepted": [2, 2, 1, 1, 0]}) if engine_detail else None)
            handle.write(json.dumps(record.to_dict()) + "\n")
    return path


def think_tokenizer(folder: Path) -> tuple[Path, int]:
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.add_tokens([AddedToken("<think>", special=False), AddedToken("</think>", special=False)])
    folder.mkdir(parents=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    template = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content.split('</think>')[-1] }}"
                "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    return folder, tokenizer.token_to_id("</think>")


@pytest.fixture(scope="module")
def phase_report(tmp_path_factory):
    base = tmp_path_factory.mktemp("phases")
    folder, close_id = think_tokenizer(base / "tokenizer")
    run = think_run(base / "run", close_id, str(folder))
    files = build_report([run], base / "out", ReportOptions(num_resamples=50))  # detected from the manifest
    return files, json.loads(files.json.read_text())


def test_per_phase_table_by_hand(phase_report):
    files, data = phase_report
    rows = {r["phase"]: r for r in data["phases"]["rows"]}
    assert set(rows) == {"thinking", "answer"}
    think, answer = rows["thinking"], rows["answer"]
    assert (think["num_tokens"], answer["num_tokens"]) == (24, 24) and think["token_share"] == 0.5
    assert think["acceptance_length"] == pytest.approx(3.0) and think["num_steps"] == 8
    assert answer["acceptance_length"] == pytest.approx(2.0) and answer["num_steps"] == 8
    assert think["source"] == answer["source"] == "chunks"
    assert think["tokens_per_s"] == pytest.approx(300.0)
    assert answer["tokens_per_s"] == pytest.approx(5 / 0.030)
    assert answer["time_to_answer_p50_s"] == pytest.approx(0.130)  # the first answer chunk arrives at 130 ms
    assert think["num_spanning_steps"] == 4 and think["rules"] == {"boundary": 4}
    detection = data["phases"]["detection"]["run"]
    assert detection["markers"]["source"] == "template:think"
    rates = [r for r in data["phases"]["position_rates"] if r["phase"] == "thinking"]
    assert [r["conditional_acceptance_rate"] for r in rates] == pytest.approx([1.0, 1.0, 0.0])
    markdown = files.markdown.read_text()
    assert "## Thinking vs answer: acceptance and latency per phase" in markdown
    assert "| SD draft K=3 | qualitative | c1 | thinking | 4 | 24 | 50.0% | 8 | 3.000 |" in markdown
    with open(files.csv["phases"]) as handle:
        assert [r["phase"] for r in csv.DictReader(handle)] == ["thinking", "answer"]
    assert "phases" in files.figures and 'id="figure-phases"' in files.html.read_text()


def test_no_phase_boundary_for_stories260k(tmp_path, models_dir):
    runs = [think_run(tmp_path / name, 99, str(models_dir)) for name in ("run", "other")]
    files = build_report(runs, tmp_path / "out", ReportOptions(num_resamples=0))
    data = json.loads(files.json.read_text())
    assert data["phases"]["rows"] == [] and "phases" not in files.figures
    assert data["phases"]["detection"]["run"]["markers"] is None
    summary = [line for line in files.markdown.read_text().splitlines() if line.startswith("- phases")]
    # one line for both runs: the same tokenizer, the same reason
    assert len(summary) == 1 and "no phase boundary" in summary[0]
    assert "[run]" in summary[0] and "[other]" in summary[0]
    assert 'No data for "Thinking vs answer' in files.html.read_text()


def test_cli_boundary_override(tmp_path, models_dir, capsys):
    run = think_run(tmp_path / "run", 99, str(models_dir))
    out = tmp_path / "out"
    assert main(["report", str(run), "--out", str(out), "--resamples", "0", "--phase-boundary-ids", "99"]) == 0
    printed = capsys.readouterr().out
    assert "phases SD draft K=3 c1: thinking 24 tokens, AL 3.000; answer 24 tokens, AL 2.000" in printed
    data = json.loads((out / "report.json").read_text())
    assert data["phases"]["detection"]["run"]["markers"]["boundary_ids"] == [99]
    # the prompt closed thinking: every output is answer, whatever it holds
    assert main(["report", str(run), "--out", str(tmp_path / "o2"), "--resamples", "0", "--phase-boundary-ids",
                 "99", "--phase-prompt-state", "closed"]) == 0
    rows = json.loads((tmp_path / "o2" / "report.json").read_text())["phases"]["rows"]
    assert {r["phase"]: r["num_tokens"] for r in rows} == {"thinking": 0, "answer": 48}
    assert main(["report", str(run), "--out", str(tmp_path / "o3"), "--phase-boundary-ids", "x"]) == 1
    assert "--phase-boundary-ids" in capsys.readouterr().err


def test_engine_detail_is_the_source_when_every_record_has_it(tmp_path, models_dir):
    # steps at token positions 1, 4, 7, 9, 11; e = 6: thinking a = 2, 2 (AL 3.0), answer a = 1, 1, 0
    # (AL 1 + 2/3: the engine counts the cut last step, which the chunk figures drop)
    run = think_run(tmp_path / "run", 99, str(models_dir), engine_detail=True)
    files = build_report([run], tmp_path / "out", ReportOptions(num_resamples=0, phase_boundary_ids="99"))
    rows = {r["phase"]: r for r in json.loads(files.json.read_text())["phases"]["rows"]}
    assert rows["thinking"]["source"] == rows["answer"]["source"] == "engine"
    assert rows["thinking"]["acceptance_length"] == pytest.approx(3.0)
    assert rows["answer"]["acceptance_length"] == pytest.approx(1 + 2 / 3)
    assert "| answer | 4 | 24 | 50.0% | 12 | 1.667 |" in files.markdown.read_text()
