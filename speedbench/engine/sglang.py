"""What ``LocalEngine(engine="sglang")`` runs: the converted models, SGLang's flags and environment.

SGLang lives in its own venv (``make sglang`` -> ``.venv-sglang``; ``$SPEEDBENCH_SGLANG_VENV``
overrides) and is started by ``sglang_launch.py`` under that venv's Python, supervised like vLLM
(``vllm_process.py``: its own session, stopped as a group). Models are the llama2.c checkpoint
converted to a Hugging Face folder (``hf_llama``, heads embedded in 32 dims) and, for draft
speculation, its Q4_0-rounded copy, exactly as for vLLM. On this CPU-only machine the kernels
come from our plain-torch stand-in (``sglang_kernel_standin/``), so timings mean nothing; the
scheduler, speculative workers, statistics and wire format are SGLang's own.

Speculation (``EngineConfig.speculation``) and SGLang's flags, with K = ``draft_length``:

============ ============ ====================================================================
mode         algorithm    flags
============ ============ ====================================================================
none         -            (none)
ngram        NGRAM        ``--speculative-num-draft-tokens K+1`` (K proposed tokens per verify)
draft        STANDALONE   ``--speculative-num-steps K --speculative-eagle-topk 1
                          --speculative-num-draft-tokens K+1`` (a chain of K)
draft-tree   STANDALONE   ``--speculative-num-steps K --speculative-eagle-topk 2
                          --speculative-num-draft-tokens 2K`` (a tree of depth K, 2K-1 nodes)
============ ============ ====================================================================
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import speedbench
from speedbench import settings
from speedbench.engine.config import EngineConfig
from speedbench.engine.vllm import model_folders, served_name

VENV_ENV = "SPEEDBENCH_SGLANG_VENV"
LAUNCHER = Path(__file__).with_name("sglang_launch.py")
# The folder that holds the ``sgl_kernel`` stand-in package (put on PYTHONPATH).
KERNEL_STANDIN = Path(__file__).with_name("sglang_kernel_standin")
TREE_TOPK = 2  # branches per draft-tree node with --speculation draft-tree


def sglang_venv() -> Path:
    env = settings.sglang_venv_dir()
    if env:
        return env
    return Path(speedbench.__file__).resolve().parent.parent / ".venv-sglang"


def sglang_python() -> Path:
    python = sglang_venv() / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"SGLang venv not found: {python} is missing (run `make sglang`, or set ${VENV_ENV})")
    return python


python = sglang_python  # the supervised engine's interface (speedbench.engines.spec.LocalLauncher.supervised)


def speculative_args(config: EngineConfig, draft: Path | None) -> list[str]:
    """SGLang's speculative flags for one config (the table in the module docstring)."""
    k = config.draft_length
    if config.speculation == "none":
        return []
    if config.speculation == "ngram":
        return ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", str(k + 1)]
    topk, tokens = (1, k + 1) if config.speculation == "draft" else (TREE_TOPK, TREE_TOPK * k)
    return ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", str(draft),
            "--speculative-num-steps", str(k), "--speculative-eagle-topk", str(topk),
            "--speculative-num-draft-tokens", str(tokens)]


def serve_request(config: EngineConfig, work_dir: Path) -> dict[str, Any]:
    """The supervisor's first stdin line: launcher, SGLang arguments, environment, address."""
    target, draft = model_folders(config, work_dir)
    argv = ["--model-path", str(target), "--served-model-name", served_name(config),
            "--device", "cpu", "--dtype", "float32", "--attention-backend", "intel_amx",
            # The overlap scheduler runs a step ahead of the statistics it reports; off, every
            # verify step is counted in the request it belongs to.
            "--disable-overlap-schedule", "--enable-metrics", "--random-seed", "0",
            "--context-length", str(config.max_model_len),
            "--max-running-requests", str(config.n_parallel),
            # The KV pool, in tokens: without it SGLang sizes it from the machine's memory.
            "--max-total-tokens", str(config.max_model_len * config.n_parallel),
            *speculative_args(config, draft)]
    caches = work_dir / "cache"
    env = {
        "SGLANG_USE_CPU_ENGINE": "1",
        "PYTHONPATH": str(KERNEL_STANDIN),
        "OMP_NUM_THREADS": str(config.n_threads),
        "HF_HOME": str(caches / "huggingface"),
        "XDG_CACHE_HOME": str(caches / "xdg"),
        "TORCHINDUCTOR_CACHE_DIR": str(caches / "torchinductor"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
        "NUMBA_CACHE_DIR": str(caches / "numba"),
        "OUTLINES_CACHE_DIR": str(caches / "outlines"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
        "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1",
    }
    return {"python_args": [str(LAUNCHER)], "argv": argv, "env": env, "host": config.host,
            "port": config.port, "models": {"target": str(target), "draft": str(draft) if draft else None}}
