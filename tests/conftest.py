"""Test-wide guards: offline Hugging Face libraries, a per-session HF_HOME, loopback-only sockets (pyproject addopts)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ[_name] = _value


@pytest.fixture(scope="session", autouse=True)
def _isolated_hf_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("hf_home")
    os.environ["HF_HOME"] = str(home)
    os.environ["HF_DATASETS_CACHE"] = str(home / "datasets")
    yield home


@pytest.fixture(scope="session")
def sources_dir() -> Path:
    """The read-only offline mirror of the real benchmark sources."""
    path = Path(os.environ.get("SPEEDBENCH_SOURCES", SHARED / "sources"))
    if not path.is_dir():
        pytest.skip(f"source mirror not found at {path}")
    return path


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The tiny real Llama model (stories260K) with its drafts and tokenizer."""
    path = Path(os.environ.get("SPEEDBENCH_MODELS", SHARED / "models" / "stories260K"))
    if not path.is_dir():
        pytest.skip(f"model folder not found at {path}")
    return path
