"""EngineConfig for vLLM and what LocalEngine would run (no server started: quick)."""
from __future__ import annotations

import json

import pytest

from speedbench.engine import EngineConfig, LocalEngine
from speedbench.engine.vllm import VENV_ENV, serve_request, vllm_python


def test_vllm_options_are_validated(tmp_path):
    with pytest.raises(ValueError, match="'synthetic' is not available with vLLM"):
        EngineConfig(engine="vllm", speculation="synthetic", synthetic_length=2.0)
    with pytest.raises(ValueError, match="unknown engine 'trtllm'"):
        EngineConfig(engine="trtllm")
    assert EngineConfig(engine="llama.cpp").engine == "llamacpp"
    assert LocalEngine(EngineConfig(speculation="ngram"), engine="vllm").config.engine == "vllm"
    with pytest.raises(ValueError, match="ngram-cache"):
        LocalEngine(EngineConfig(speculation="ngram-cache"), engine="vllm")
    assert EngineConfig(engine="vllm").startup_timeout > EngineConfig().startup_timeout


def test_serve_request_ngram(models_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    config = EngineConfig(engine="vllm", speculation="ngram", draft_length=3, n_parallel=2, n_threads=1)
    assert config.target_path == models_dir / "stories260K.bin"
    request = serve_request(config, tmp_path)
    argv = request["argv"]
    assert argv[0] == request["models"]["target"] and request["models"]["draft"] is None
    assert (tmp_path / "models").is_dir() and argv[0].startswith(str(tmp_path / "models"))
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    assert argv[argv.index("--per-request-spec-decode-metrics") + 1] == "detailed"
    assert argv[argv.index("--max-num-seqs") + 1] == "2" and "--enforce-eager" in argv
    assert argv[argv.index("--served-model-name") + 1] == "stories260K"
    env = request["env"]
    assert env["VLLM_TARGET_DEVICE"] == "cpu" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    for name in ("VLLM_CACHE_ROOT", "HF_HOME", "XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR"):
        assert env[name].startswith(str(tmp_path)), name


def test_serve_request_draft_and_none(models_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    request = serve_request(EngineConfig(engine="vllm", speculation="draft", draft_length=4), tmp_path)
    spec = json.loads(request["argv"][request["argv"].index("--speculative-config") + 1])
    assert spec["method"] == "draft_model" and spec["num_speculative_tokens"] == 4
    assert spec["model"] == request["models"]["draft"] and "q4_0" in spec["model"]
    plain = serve_request(EngineConfig(engine="vllm", speculation="none"), tmp_path)["argv"]
    # vLLM refuses --per-request-spec-decode-metrics without speculation
    assert "--speculative-config" not in plain and "--per-request-spec-decode-metrics" not in plain


def test_missing_vllm_venv_is_named(tmp_path, monkeypatch, models_dir):
    monkeypatch.setenv(VENV_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="make vllm"):
        vllm_python()
    from speedbench.cli import main

    monkeypatch.setenv("SPEEDBENCH_MODELS", str(models_dir))
    assert main(["serve", "--engine", "vllm", "--speculation", "ngram"]) == 2
