"""Fixtures of the leaderboard tests, defined once in tests/leaderboard/fixtures.py (tests/space/
uses the same ones for the Gradio app)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _fixtures():
    name = "speedbench_leaderboard_test_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "leaderboard" / "fixtures.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


globals().update({k: v for k, v in vars(_fixtures()).items() if not k.startswith("__")})
