"""Fixtures of the engine tests: the independent numpy reference forwards (tests/engine/numpy_llama.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def load_numpy_llama():
    path = Path(__file__).with_name("numpy_llama.py")
    spec = importlib.util.spec_from_file_location("speedbench_tests_numpy_llama", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def np_llama():
    return load_numpy_llama()
