"""Run the real ``vllm bench serve`` (from .venv-vllm) and ``speedbench run`` on the same exported rows.

Shared by ``tests/peers/test_vllm_peer_agreement.py`` and ``bench/peer_agreement.py``. Rows are kept
shorter than one KV-cache block (16 tokens) so that no prompt is ever prefix-cached: a cached prompt
(vLLM 0.32's placeholder draft step, issue 20) would count a step in one run and not the other.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from speedbench.schema import DatasetRow
from tests.standins.fixtures import STORY_STARTS

CONFIG = "qualitative"  # vllm bench serve's --speed-bench-dataset-subset takes the published names only
CATEGORIES = ("writing", "qa", "roleplay")
BLOCK_TOKENS = 16


def short_rows(count: int, tokenizer, multiturn_every: int = 0) -> list[DatasetRow]:
    """``count`` story rows (categories in turn) whose first-turn prompt stays under one cache block."""
    rows: list[DatasetRow] = []
    index = 0
    while len(rows) < count:
        start = STORY_STARTS[index % len(STORY_STARTS)]
        text = f"{start} {index}" if index >= len(STORY_STARTS) else start
        index += 1
        if len(tokenizer.encode_completion(text)) >= BLOCK_TOKENS:
            continue
        turns = [text]
        if multiturn_every and len(rows) % multiturn_every == multiturn_every - 1:
            turns += ["What happened next?"]
        rows.append(DatasetRow(category=CATEGORIES[len(rows) % len(CATEGORIES)], sub_category="story", turns=turns,
                               source="peer-agreement", src_id=str(index)))
    return rows


def vllm_bench_serve(url: str, model: str, tokenizer: Path, export_dir: Path, result: Path, *, num_prompts: int,
                     concurrency: int, max_tokens: int, category: str | None = None, timeout: float = 900) -> dict:
    """``vllm bench serve --dataset-name speed_bench`` against ``url``; returns its saved result."""
    from speedbench.engine.vllm import vllm_venv

    command = [str(vllm_venv() / "bin" / "vllm"), "bench", "serve", "--base-url", url, "--model", model,
               "--tokenizer", str(tokenizer), "--dataset-name", "speed_bench", "--dataset-path", str(export_dir),
               "--speed-bench-dataset-subset", CONFIG, "--speed-bench-output-len", str(max_tokens),
               "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency), "--temperature", "0",
               "--skip-chat-template", "--disable-shuffle", "--save-result", "--result-dir", str(result.parent),
               "--result-filename", result.name, "--disable-tqdm"]
    if category:
        command += ["--speed-bench-category", category]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_TARGET_DEVICE="cpu",
               VLLM_NO_USAGE_STATS="1", TOKENIZERS_PARALLELISM="false")
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(f"vllm bench serve failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    data = json.loads(result.read_text())
    data["_wall_s"] = time.monotonic() - started
    data["_stdout"] = done.stdout
    return data


def speedbench_run(url: str, tokenizer: Path, dataset: Path, out: Path, *, concurrency: int, max_tokens: int,
                   extra: tuple[str, ...] = ()) -> int:
    """Our client on the same rows: completion mode (the raw text with BOS, as vLLM's
    ``--skip-chat-template`` text is tokenized by the server), greedy, same ``max_tokens``."""
    from speedbench.cli import main

    return main(["run", "--engine", "vllm", "--url", url, "--tokenizer", str(tokenizer), "--dataset", str(dataset),
                 "--config", CONFIG, "--out", str(out), "--no-progress", "--resamples", "200",
                 "--prompt-mode", "completion", "--temperature", "0", "--concurrency", str(concurrency),
                 "--max-tokens", str(max_tokens), *extra])
