"""tests/space/ uses the leaderboard's fixtures (tests/leaderboard/fixtures.py) through the one loader
in tests/leaderboard/conftest.py."""
from __future__ import annotations

import runpy
from pathlib import Path

_loader = runpy.run_path(str(Path(__file__).resolve().parents[1] / "leaderboard" / "conftest.py"))
globals().update({k: v for k, v in _loader.items() if not k.startswith("__")})
