"""The plan file's tables as written (before ``k`` lists expand into variants); pydantic checks them.

Strict types (a string is never taken for a number) and no unknown keys, except in the tables of
``speedbench run`` options (``[run]``, a ``[[workload]]``'s own keys, ``[variant.run]``), whose
keys are checked against ``speedbench run``'s own declaration (``speedbench.sweep.run_options``).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speedbench import engines

DEFAULT_HEALTH_PATH = "/health"
DEFAULT_STARTUP_TIMEOUT_S = 900.0  # a large model on a busy node can take many minutes to load
DEFAULT_STOP_TIMEOUT_S = 30.0  # SIGTERM to the process group, then SIGKILL
BASELINE_METHOD = "none"
# How {schedule} is written into a schedule variant's command: speedbench serve's --draft-schedule text
# ("1-1:4,2-64:1"), or an engine's own form as JSON (speedbench.engine.schedule_forms).
SCHEDULE_FORMATS = ("ranges", *engines.names_with("schedule_form"))  # EngineSpec.schedule_form


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class VariantSpec(_Strict):
    """One ``[[variant]]``: a server to measure (a command to start, or the URL of a running one)."""

    name: str = Field(min_length=1)
    engine: str
    method: str = BASELINE_METHOD
    k: int | list[int] | None = None
    baseline: str | None = None
    command: str | None = None
    url: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    host: str = "127.0.0.1"
    health: str = DEFAULT_HEALTH_PATH
    startup_timeout_s: float = Field(default=DEFAULT_STARTUP_TIMEOUT_S, gt=0)
    stop_timeout_s: float = Field(default=DEFAULT_STOP_TIMEOUT_S, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    gpus: int = Field(default=1, ge=1)
    drafter: str | None = None
    run: dict[str, Any] = Field(default_factory=dict)
    # A variant served with the draft schedule derived from a family's static-K runs
    # (speedbench.sweep.schedule): the name of that family's [[variant]] table as written ("draft-k{k}").
    schedule: str | None = None
    schedule_format: str = Field(default=SCHEDULE_FORMATS[0], pattern="^(" + "|".join(SCHEDULE_FORMATS) + ")$")
    schedule_workload: str | None = None  # whose measurements give the schedule (default: the first workload)


class WorkloadSpec(BaseModel):
    """One ``[[workload]]``: a dataset config and its load points; its other keys are run options."""

    model_config = ConfigDict(extra="allow", strict=True)

    config: str = Field(min_length=1)
    name: str | None = None
    dataset: str | None = None
    repeats: int | None = Field(default=None, ge=1)


class SubmissionSpec(_Strict):
    """``[submission]``: what a leaderboard bundle needs that no run records."""

    model: str | None = None
    model_family: str = ""
    gpu: str | None = None
    submitter: str = ""
    notes: str = ""


class PlanSpec(_Strict):
    title: str = "SPEED-Bench sweep"
    tokenizer: str
    dataset: str | None = None
    repeats: int = Field(default=1, ge=1)
    run: dict[str, Any] = Field(default_factory=dict)
    workload: list[WorkloadSpec] = Field(min_length=1)
    variant: list[VariantSpec] = Field(min_length=1)
    submission: SubmissionSpec = Field(default_factory=SubmissionSpec)
