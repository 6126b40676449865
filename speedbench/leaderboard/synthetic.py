"""Synthetic but realistic runs with known acceptance, for the leaderboard's tests and local preview.

``make_dataset`` writes a tiny dataset folder in the published layout (parquet per config and a
``manifest.json``); ``make_run`` writes a RUN_DIR exactly as ``speedbench run`` does
(:mod:`speedbench.records` dataclasses), simulating speculative decoding step by step: each
step accepts draft position i with conditional probability ``rates[i]`` (scaled per category),
so the expected AL is ``1 + sum_i prod_{j<=i} rate_j``. Closed-loop load points run requests in
waves of ``concurrency``; a step takes ``step_time_s`` (longer with more concurrency), so output
and user TPS are known too. Nothing here is ever shown as a real result: the preview board
labels these entries "synthetic".
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from speedbench import engines
from speedbench.fingerprint import dataset_fingerprint
from speedbench.records import MANIFEST_NAME, RECORDS_NAME, RESULTS_NAME, EngineSpecStats, RunManifest, TurnRecord
from speedbench.schema import (
    QUALITATIVE_CATEGORIES,
    THROUGHPUT_BUCKETS,
    THROUGHPUT_CATEGORIES,
    DatasetRow,
    rows_to_table,
)


def make_dataset(out_dir: Path, rows_per_category: int = 4, configs=("qualitative", "throughput_1k")) -> Path:
    """A small dataset folder: ``data/<config>/test.parquet`` + ``manifest.json``."""
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    manifest = {"format": "speed-bench dataset folder v1", "synthetic": True, "configs": {}}
    for config in configs:
        cats = QUALITATIVE_CATEGORIES if config == "qualitative" else THROUGHPUT_CATEGORIES
        rows = [DatasetRow(category=c, sub_category="synthetic", turns=[f"{config} {c} prompt {i}"],
                           source="synthetic", src_id=f"{config}/{c}/{i}")
                for c in cats for i in range(rows_per_category)]
        path = out_dir / "data" / config / "test.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows_to_table(rows), path)
        manifest["configs"][config] = {"rows": len(rows), "row_hashes": {r.question_id: r.category for r in rows}}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out_dir


def dataset_rows(dataset_dir: Path, config: str) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(Path(dataset_dir) / "data" / config / "test.parquet", columns=["question_id", "category"])
    return list(zip(table.column("question_id").to_pylist(), table.column("category").to_pylist()))


@dataclass
class SimulatedEngine:
    """What the simulated server does: draft length, per-position acceptance, per-step time."""

    engine: str = "vllm"
    engine_version: str = "0.11.0"
    model_id: str = "meta-llama/Llama-3.3-70B-Instruct"
    draft_length: int = 3
    rates: tuple[float, ...] = (0.8, 0.7, 0.6)  # conditional acceptance per draft position
    category_scale: dict | None = None  # category -> multiplier on every rate (capped at 1)
    step_time_s: float = 0.02  # at concurrency 1; grows with concurrency
    ttft_s: float = 0.05
    speculative: bool = True
    report_engine_stats: bool = False  # attach per-request EngineSpecStats (histogram and counts)

    def expected_al(self, category: str | None = None) -> float:
        scale = (self.category_scale or {}).get(category, 1.0) if category else 1.0
        rates = np.minimum(np.asarray(self.rates[: self.draft_length]) * scale, 1.0)
        return float(1 + np.cumprod(rates).sum())


def _simulate_steps(rng: np.random.Generator, engine: SimulatedEngine, category: str, tokens: int) -> list[int]:
    """Chunk sizes of one response: a lone prefill token, then one chunk per verification step."""
    if not engine.speculative:
        return [1] * tokens
    scale = (engine.category_scale or {}).get(category, 1.0)
    rates = np.minimum(np.asarray(engine.rates[: engine.draft_length]) * scale, 1.0)
    chunks, produced = [1], 1
    while produced < tokens:
        accepted = 0
        for rate in rates:
            if rng.random() < rate:
                accepted += 1
            else:
                break
        size = min(1 + accepted, tokens - produced)
        chunks.append(size)
        produced += size
    return chunks


def _stats_source(engine: str) -> str:
    """The statistics source the engine's adapter writes (its spec, speedbench/engines/)."""
    spec = engines.REGISTRY.get(engine)
    return spec.stats_source if spec is not None and spec.stats_source else f"{engine}.metrics"


def _engine_stats(engine: SimulatedEngine, chunks: list[int]) -> EngineSpecStats | None:
    """What a vLLM-like engine reports: every verify step after the prefill token, the cut last one too."""
    if not (engine.speculative and engine.report_engine_stats):
        return None
    steps = chunks[1:]
    histogram = [0] * (engine.draft_length + 1)
    for size in steps:
        histogram[size - 1] += 1
    return EngineSpecStats(source=_stats_source(engine.engine), verify_steps=len(steps), accepted_tokens=sum(s - 1 for s in steps),
                           draft_tokens=engine.draft_length * len(steps), acceptance_histogram=histogram,
                           draft_length=engine.draft_length)


def make_run(run_dir: Path, dataset_dir: Path, config: str, engine: SimulatedEngine, *,
             concurrencies=(1,), output_tokens: int = 64, seed: int = 0, limit: int | None = None,
             started_unix_s: float = 1.7e9, jitter: bool = True) -> Path:
    """Write ``records.jsonl``, ``manifest.json`` and ``results.json`` of a simulated run."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = dataset_rows(dataset_dir, config)[:limit]
    # a throughput bucket's prompts are as long as the bucket (the board checks it)
    prompt_tokens = THROUGHPUT_BUCKETS.get(config.split("_", 1)[-1], 100) if config.startswith("throughput_") else 100
    rng = np.random.default_rng(seed)
    clock = 1_000_000_000_000  # ns on a monotonic clock
    records: list[TurnRecord] = []
    for concurrency in concurrencies:
        step_ns = int(engine.step_time_s * (1 + 0.05 * (concurrency - 1)) * 1e9)
        point = f"c{concurrency}"
        for wave in range(0, len(rows), concurrency):
            wave_end = clock
            for question_id, category in rows[wave: wave + concurrency]:
                chunks = _simulate_steps(rng, engine, category, output_tokens)
                first = clock + int(engine.ttft_s * 1e9)
                # each step's time jitters (a real server's never repeat to the nanosecond); without
                # jitter the records compress far better (bench/leaderboard_load.py's largest bundle)
                spread = step_ns // 50 if jitter else 0
                steps = rng.integers(step_ns - spread, step_ns + spread + 1, size=len(chunks))
                times = (first + np.concatenate(([0], np.cumsum(steps[1:])))).tolist()
                records.append(TurnRecord(
                    record_key=f"{point}/{question_id}/0", run_point=point, load_shape="closed",
                    requested_concurrency=concurrency, request_rate=None, question_id=question_id,
                    category=category, sub_category="synthetic", turn_index=0, num_turns=1, warmup=False,
                    worker=0, prompt_tokens=prompt_tokens, prompt_sha256=hashlib.sha256(question_id.encode()).hexdigest(),
                    scheduled_ns=clock, send_ns=clock + 1000, end_ns=times[-1] + 1000, started_unix_s=started_unix_s,
                    chunk_ns=times, chunk_tokens=chunks, chunks_are_steps=True, output_tokens=sum(chunks),
                    finish_reason="length", engine_stats=_engine_stats(engine, chunks)))
                wave_end = max(wave_end, times[-1] + 1000)
            clock = wave_end + 1000
    with open(run_dir / RECORDS_NAME, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), sort_keys=True) + "\n")
    manifest = RunManifest(
        engine=engine.engine, url="http://127.0.0.1:8000", model_id=engine.model_id,
        engine_version=engine.engine_version, server={}, dataset_dir=str(dataset_dir), dataset_config=config,
        dataset_config_sha256=dataset_fingerprint(dataset_dir, config), dataset_manifest_sha256="",
        num_rows=len(rows),
        tokenizer_path="tokenizer.json", tokenizer_sha256="0" * 64, chat_template=True, prompt_mode="chat",
        options={"concurrency": list(concurrencies), "synthetic": True,
                 "sampling": {"max_tokens": output_tokens, "temperature": 0.0, "ignore_eos": True, "seed": seed},
                 "draft_length": engine.draft_length if engine.speculative else 0},
        client_version="synthetic", python_version="3.11", created_unix_s=started_unix_s)
    (run_dir / MANIFEST_NAME).write_text(json.dumps(manifest.to_dict(), indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
    (run_dir / RESULTS_NAME).write_text(json.dumps({"note": "client summary (not trusted by the board)"}) + "\n",
                                          encoding="utf-8")
    return run_dir


def replicate_run(run_dir: Path, out: Path, points: int, salt: int = 0) -> Path:
    """``run_dir``'s c1 records repeated as load points c1..c<points> (same work at every point), each
    record's end moved by a few ns per ``salt`` and point (the board refuses the same records twice):
    the benches' largest bundles."""
    out.mkdir(parents=True, exist_ok=True)
    lines = (run_dir / RECORDS_NAME).read_text().splitlines()
    with open(out / RECORDS_NAME, "w", encoding="utf-8") as handle:
        for c in range(1, points + 1):
            for line in lines:
                r = json.loads(line)
                r.update(run_point=f"c{c}", requested_concurrency=c, record_key=f"c{c}/{r['question_id']}/0",
                         end_ns=r["end_ns"] + salt * 100 + c)
                handle.write(json.dumps(r) + "\n")
    for name in (MANIFEST_NAME, RESULTS_NAME):
        (out / name).write_bytes((run_dir / name).read_bytes())
    return out
