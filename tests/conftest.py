"""Test-wide guards: offline Hugging Face libraries, a per-session HF_HOME, loopback-only sockets (pyproject addopts)."""
from __future__ import annotations

import os
import signal
from fnmatch import fnmatch
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_INSTALL = "sudo apt-get install -y chromium"

# Markers (registered in pyproject.toml), applied here by test file name and fixture so that a
# new test in one of these files is marked without anyone remembering to. File names rather than
# paths: a file keeps its marker when it moves to another folder. `make test-quick` deselects all.
MARKED_FILES = {
    "browser": ("test_*browser*.py",),
    # a real engine server (llama.cpp), a stand-in server or a CLI subprocess, end to end
    "e2e": ("test_*e2e*.py", "test_local_engine.py", "test_faults_and_resume.py", "test_load_shapes.py",
            "test_standin_engines.py", "test_real_client_runs.py"),
    "vllm": ("test_*vllm*.py",),
    # a real SGLang server from .venv-sglang (its files are named *e2e*, so e2e too)
    "sglang": ("test_*sglang*e2e*.py",),
    # over ~10 s on a 2-core machine (module fixtures that build datasets)
    "slow": ("test_qualitative_build.py", "test_packaged_known_build.py", "test_fresh_clone_e2e.py"),
}
MARKED_FIXTURES = {"browser": ("browser", "page"), "vllm": ("vllm_*",), "sglang": ("sglang_server*",)}


def markers_for(file_name: str, fixtures) -> set[str]:
    """The markers a test gets from its file name and the fixtures it uses."""
    marks = {name for name, patterns in MARKED_FILES.items() if any(fnmatch(file_name, p) for p in patterns)}
    marks |= {name for name, patterns in MARKED_FIXTURES.items()
              if any(fnmatch(f, p) for f in fixtures for p in patterns)}
    return marks


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in sorted(markers_for(item.path.name, getattr(item, "fixturenames", ()))):
            item.add_marker(getattr(pytest.mark, name))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Never skip the browser tests silently: without Chromium they fail and say what to run.
    if item.get_closest_marker("browser") and not CHROMIUM.exists():
        pytest.fail(f"the browser tests need Chromium at {CHROMIUM}: run `{CHROMIUM_INSTALL}` "
                    "(or `make test`, which installs it), or deselect them with -m 'not browser'",
                    pytrace=False)

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ[_name] = _value


# The Ctrl-C tests send SIGINT to the processes they start. A launcher that ignores SIGINT (a
# background job of a non-interactive shell, nohup, some CI runners) passes the ignored disposition
# down through every exec, and a Python process that starts with SIGINT ignored never raises
# KeyboardInterrupt: those tests would then measure the launcher, not Ctrl-C. This process takes the
# handler a terminal gives Python, so the processes it starts get the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
