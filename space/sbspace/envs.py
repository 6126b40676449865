"""Settings from the environment (the Space's secrets and variables)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from speedbench import settings
from speedbench.leaderboard.admission import Budget
from speedbench.leaderboard.archive import ArchiveLimits
from speedbench.leaderboard.quota import uploads_per_hour
from speedbench.leaderboard.store import db_path_from_env
from sbspace.guard import GuardLimits


@dataclass
class Settings:
    db_path: Path = field(default_factory=db_path_from_env)  # SPEEDBENCH_DB
    host: str = field(default_factory=lambda: settings.gradio_server()[0])
    port: int = field(default_factory=lambda: settings.gradio_server()[1])
    limits: ArchiveLimits = field(default_factory=ArchiveLimits.from_env)  # SPEEDBENCH_MAX_BUNDLE_MB
    known_builds: list[str] | None = None  # None: SPEEDBENCH_KNOWN_BUILDS
    mirror_repo: str = field(default_factory=lambda: settings.hub_mirror_repo() or "")
    budget: Budget = field(default_factory=Budget.from_env)  # SPEEDBENCH_MAX_VALIDATIONS ...
    guard: GuardLimits = field(default_factory=GuardLimits.from_env)  # SPEEDBENCH_BODY_TIMEOUT_S ...
    uploads_per_hour: int = field(default_factory=uploads_per_hour)  # SPEEDBENCH_UPLOADS_PER_HOUR


HUB_TIMEOUT_S = (10.0, 120.0)  # connect, everything else


def hub_client_with_timeouts() -> None:
    """huggingface_hub's HTTP client with timeouts (its default waits forever)."""
    import httpx2
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    def factory():
        client = _http.default_client_factory()
        client.timeout = httpx2.Timeout(HUB_TIMEOUT_S[1], connect=HUB_TIMEOUT_S[0])
        return client

    set_client_factory(factory)
