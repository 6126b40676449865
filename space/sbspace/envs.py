"""Settings from the environment (the Space's secrets and variables)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.store import db_path_from_env


@dataclass
class Settings:
    db_path: Path = field(default_factory=db_path_from_env)  # SPEEDBENCH_DB
    host: str = field(default_factory=lambda: os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    port: int = field(default_factory=lambda: int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    limits: ArchiveLimits = field(default_factory=ArchiveLimits.from_env)  # SPEEDBENCH_MAX_BUNDLE_MB
    known_builds: list[str] | None = None  # None: SPEEDBENCH_KNOWN_BUILDS
    mirror_repo: str = field(default_factory=lambda: os.environ.get("SPEEDBENCH_HUB_MIRROR", ""))
