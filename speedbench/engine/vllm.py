"""What ``LocalEngine(engine="vllm")`` runs: the converted models, ``vllm serve`` options and env.

vLLM lives in its own venv (``make vllm`` -> ``.venv-vllm``; ``$SPEEDBENCH_VLLM_VENV`` overrides),
driven through ``vllm_process.py`` (standard library only) under that venv's Python. Targets and
drafts are llama2.c checkpoints (``.bin``, converted by ``hf_llama``) or Hugging Face folders
served as they are. The default draft is the target rounded like Q4_0. Every cache vLLM, torch,
Hugging Face or XDG would write goes under the engine's work folder.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import speedbench
from speedbench import settings
from speedbench.engine.config import EngineConfig
from speedbench.engine.hf_llama import converted_folder

VENV_ENV = "SPEEDBENCH_VLLM_VENV"
SUPERVISOR = Path(__file__).with_name("vllm_process.py")
# n-gram lookup as in the recorded wire traffic (../shared/wire/vllm-0.32.0-cpu/README.md)
NGRAM_LOOKUP_MAX, NGRAM_LOOKUP_MIN = 4, 1


def vllm_venv() -> Path:
    env = settings.vllm_venv_dir()
    if env:
        return env
    return Path(speedbench.__file__).resolve().parent.parent / ".venv-vllm"


def vllm_python() -> Path:
    python = vllm_venv() / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"vLLM venv not found: {python} is missing (run `make vllm`, or set ${VENV_ENV})")
    return python


python = vllm_python  # the supervised engine's interface (speedbench.engines.spec.LocalLauncher.supervised)


def _model_folder(path: Path, models_dir: Path, *, q4_0: bool) -> Path:
    if path.is_dir():
        return path
    tokenizer_dir = path.parent
    return converted_folder(path, tokenizer_dir, models_dir, draft_q4_0=q4_0)


def model_folders(config: EngineConfig, work_dir: Path) -> tuple[Path, Path | None]:
    """HF folders for the target and (with draft speculation) the draft, converted into ``work_dir``
    (shared with ``speedbench.engine.sglang``, which serves the same folders)."""
    models = work_dir / "models"
    target = _model_folder(config.target_path, models, q4_0=False)
    draft = None
    if config.uses_draft_model:  # vLLM "draft"; SGLang "draft" and "draft-tree" too
        if config.draft is None:  # the weaker default draft: the target rounded like Q4_0
            draft = _model_folder(config.target_path, models, q4_0=True) if not config.target_path.is_dir() else None
            if draft is None:
                raise ValueError("EngineConfig.draft: a Hugging Face target folder needs an explicit draft")
        else:
            draft = _model_folder(config.draft_path, models, q4_0=False)
    return target, draft


def speculative_config(config: EngineConfig, draft: Path | None) -> dict[str, Any] | None:
    if config.speculation == "none":
        return None
    if config.speculation == "ngram":
        spec = {"method": "ngram", "num_speculative_tokens": config.draft_length,
                "prompt_lookup_max": NGRAM_LOOKUP_MAX, "prompt_lookup_min": NGRAM_LOOKUP_MIN}
    else:
        spec = {"method": "draft_model", "model": str(draft), "num_speculative_tokens": config.draft_length}
    if config.draft_schedule:
        from speedbench.engine.draft_schedule import parse_draft_schedule
        from speedbench.engine.schedule_forms import vllm_schedule

        spec.update(vllm_schedule(parse_draft_schedule(config.draft_schedule, config.draft_length),
                                  config.draft_length))
    return spec


def served_name(config: EngineConfig) -> str:
    return config.target_path.stem if not config.target_path.is_dir() else config.target_path.name


def serve_request(config: EngineConfig, work_dir: Path) -> dict[str, Any]:
    """The supervisor's first stdin line: ``vllm serve`` arguments, environment, address."""
    target, draft = model_folders(config, work_dir)
    argv = [str(target), "--served-model-name", served_name(config), "--dtype", "float32",
            "--max-model-len", str(config.max_model_len), "--max-num-seqs", str(config.n_parallel),
            "--seed", "0", "--enforce-eager", "--generation-config", "vllm"]
    spec = speculative_config(config, draft)
    if spec is not None:
        # Exact per-request statistics in the final usage chunk (the client's primary source);
        # "detailed" adds the ordered per-step accepted counts, which split acceptance by phase
        # (speedbench.metrics.phases).
        argv += ["--speculative-config", json.dumps(spec, sort_keys=True),
                 "--per-request-spec-decode-metrics", "detailed"]
    caches = work_dir / "cache"
    env = {
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": str(config.kv_cache_gib),
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # a shared machine: let the OS place the threads
        "OMP_NUM_THREADS": str(config.n_threads),
        "VLLM_CACHE_ROOT": str(caches / "vllm"),
        "VLLM_CONFIG_ROOT": str(caches / "vllm-config"),
        "HF_HOME": str(caches / "huggingface"),
        "XDG_CACHE_HOME": str(caches / "xdg"),
        "TORCHINDUCTOR_CACHE_DIR": str(caches / "torchinductor"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
        "NUMBA_CACHE_DIR": str(caches / "numba"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }
    return {"argv": argv, "env": env, "host": config.host, "port": config.port,
            "models": {"target": str(target), "draft": str(draft) if draft else None}}
