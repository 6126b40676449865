"""Synthetic run folders with known acceptance and timing, written record by record for the tests.

Each request streams a lone prefill token, then verification steps of ``1 + j`` tokens, where j
(accepted drafts) follows fixed per-position conditional rates per category, until
``max_tokens``; steps take ``step_s`` seconds each. Requests run in ``concurrency`` lanes back to
back, so every timing is known in closed form.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from speedbench.records import EngineSpecStats, RunManifest, TurnRecord

CATEGORIES = {"coding": [0.9, 0.8, 0.7, 0.6], "writing": [0.5, 0.4, 0.3, 0.2], "math": [1.0, 1.0, 1.0, 1.0]}


def synthetic_records(*, speculative: bool, draft_length: int, concurrency: int, per_category: int, max_tokens: int,
                      ttft_s: float, step_s: float, seed: int, categories=CATEGORIES) -> list[TurnRecord]:
    rng = np.random.default_rng(seed)
    records = []
    lanes = [10**12] * concurrency  # ns; an arbitrary monotonic-clock origin
    index = 0
    for category, rates in categories.items():
        for n in range(per_category):
            lane = index % concurrency
            index += 1
            start = lanes[lane]
            sizes = [1]
            accepted_total = 0
            while sum(sizes) < max_tokens:
                j = 0
                if speculative:
                    while j < draft_length and rng.random() < rates[j]:
                        j += 1
                size = min(1 + j, max_tokens - sum(sizes))
                accepted_total += size - 1
                sizes.append(size)
            times = [start + int(ttft_s * 1e9)]
            for _ in sizes[1:]:
                times.append(times[-1] + int(step_s * 1e9))
            lanes[lane] = times[-1]
            qid = f"{category}-{n:03d}"
            verify = len(sizes) - 1
            stats = EngineSpecStats(source="synthetic", verify_steps=verify,
                                    draft_tokens=verify * draft_length if speculative else 0,
                                    accepted_tokens=accepted_total)
            records.append(TurnRecord(
                record_key=f"c{concurrency}/{qid}/0", run_point=f"c{concurrency}", load_shape="closed",
                requested_concurrency=concurrency, request_rate=None, question_id=qid, category=category,
                sub_category="", turn_index=0, num_turns=1, warmup=False, worker=0, prompt_tokens=100 + n,
                prompt_sha256="0" * 64, scheduled_ns=start, send_ns=start, end_ns=times[-1], started_unix_s=1.8e9,
                chunk_ns=times, chunk_tokens=sizes, chunks_are_steps=True, output_tokens=sum(sizes),
                output_text="<b>story</b> & more", finish_reason="length", response_id=f"r{index}",
                engine_stats=stats))
    return records


def write_run(path: Path, *, speculative: bool, draft_length: int = 4, concurrencies=(1, 2), per_category: int = 6,
              max_tokens: int = 24, ttft_s: float = 0.05, step_s: float = 0.01, config: str = "throughput_1k",
              seed: int = 0, label: str | None = None, extra_records: list[TurnRecord] = ()) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        engine="llamacpp", url="http://127.0.0.1:1", model_id="stories260K <script>alert(1)</script>",
        engine_version="llama.cpp b0", server={}, dataset_dir="speed-bench", dataset_config=config,
        dataset_config_sha256="cd" * 32, dataset_manifest_sha256="ab" * 32, num_rows=per_category * len(CATEGORIES), tokenizer_path="tok.json",
        tokenizer_sha256="cd" * 32, chat_template=False, prompt_mode="completion",
        options={"max_tokens": max_tokens}, client_version="test", python_version="3.11", created_unix_s=1.8e9)
    (path / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    with open(path / "records.jsonl", "w") as handle:
        for c in concurrencies:
            for record in synthetic_records(speculative=speculative, draft_length=draft_length, concurrency=c,
                                            per_category=per_category, max_tokens=max_tokens, ttft_s=ttft_s,
                                            step_s=step_s, seed=seed + c):
                handle.write(json.dumps(record.to_dict()) + "\n")
        for record in extra_records:
            handle.write(json.dumps(record.to_dict()) + "\n")
    engine = {"speculation": "draft" if speculative else "none", "draft_length": draft_length if speculative else 0}
    if label:
        engine["label"] = label
    (path / "engine.json").write_text(json.dumps(engine))
    return path


@pytest.fixture(scope="session")
def synthetic_runs(tmp_path_factory) -> dict[str, Path]:
    tmp_path = tmp_path_factory.mktemp("runs")
    return {
        "sd": write_run(tmp_path / "sd", speculative=True, step_s=0.02, seed=1),
        "baseline": write_run(tmp_path / "baseline", speculative=False, step_s=0.01, seed=2),
    }


@pytest.fixture
def run_writer():
    """``write_run`` (tests import nothing from conftest under --import-mode=importlib)."""
    return write_run


@pytest.fixture
def records_maker():
    return synthetic_records


@pytest.fixture(scope="session")
def synthetic_report(synthetic_runs, tmp_path_factory):
    """The report of the synthetic SD and baseline runs: (ReportFiles, parsed report.json)."""
    import json

    from speedbench.report import build_report

    files = build_report([synthetic_runs["sd"], synthetic_runs["baseline"]], tmp_path_factory.mktemp("report"))
    return files, json.loads(files.json.read_text())
