"""Column definitions: board key -> header, type, and whether it shows by default."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    datatype: str  # "str" | "number": text is always shown as text, never as HTML/Markdown
    default: bool = True


IDENTITY = [
    Column("model", "Model", "str"),
    Column("drafter", "Drafter", "str"),
    Column("sd_method", "Method", "str"),
    Column("engine", "Engine", "str"),
    Column("engine_version", "Engine version", "str"),
    Column("gpu", "GPU", "str"),
    Column("draft_length", "K", "number"),
    Column("temperature", "Temp.", "number"),
]
ACCEPTANCE = [
    Column("al", "Mean AL", "number"),
    Column("al_ci_low", "AL CI low", "number", default=False),
    Column("al_ci_high", "AL CI high", "number", default=False),
    Column("al_request_weighted", "AL (req.)", "number"),
]
TRAILING = [
    Column("model_family", "Family", "str", default=False),
    Column("submitted", "Submitted", "str"),
    Column("id", "Entry", "str"),
]


def category_column(key: str) -> Column:
    return Column(key, key[3:], "number")


def category_ci_columns(key: str) -> list[Column]:
    name = key[3:]
    return [Column(f"{key}_ci_low", f"{name} CI low", "number"), Column(f"{key}_ci_high", f"{name} CI high", "number")]


def speedup_column(key: str) -> Column:
    _, isl, concurrency = key.split("_")
    return Column(key, f"Speedup {isl} c={concurrency[1:]}", "number")


SORTABLE = {c.header: c.key for c in IDENTITY + ACCEPTANCE + TRAILING}
