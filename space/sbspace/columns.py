"""Column definitions: board key -> header, type, and whether it shows by default.

The set is fixed and bounded whatever is submitted: identity, AL, one column per known
category (CIs on request), two per ISL bucket (best speedup, at which concurrency), trust,
warnings, losslessness, family, date, id. Per-concurrency figures are in Compare (Pareto curves)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    datatype: str  # "str" | "number": text is always shown as text, never as HTML/Markdown
    default: bool = True
    width: int = 90  # pixels


IDENTITY = [
    Column("model", "Model", "str", width=330),
    Column("drafter", "Drafter", "str", width=270),
    Column("sd_method", "Method", "str", width=110),
    Column("engine", "Engine", "str"),
    Column("engine_version", "Version", "str"),
    Column("gpu", "GPU", "str", width=110),
    # "4", or "dynamic 1-4" when the draft length varied from step to step (speedbench.leaderboard.board.k_label)
    Column("k", "K", "str", width=90),
    Column("temperature", "Temp.", "number", width=70),
]
ACCEPTANCE = [
    Column("al", "Mean AL", "number", width=95),
    Column("al_ci_low", "AL CI low", "number", default=False),
    Column("al_ci_high", "AL CI high", "number", default=False),
    Column("al_request_weighted", "AL (req.)", "number", width=95),
]
# Per-phase AL (thinking vs answer): shown only when some entry submitted a phase boundary.
PHASES = [
    Column("al_thinking", "AL thinking", "number", width=110),
    Column("al_answer", "AL answer", "number", width=100),
]
TRAILING = [
    # the largest share of a load point's requests timed by a busy client (left out of its latency figures)
    Column("client_lagged", "Client-lagged % (max)", "number", width=130),
    Column("trust", "Trust", "str", width=120),
    Column("warnings", "Warnings", "str", width=200),
    Column("lossless", "Lossless (T=0)", "str", width=230),
    Column("model_family", "Family", "str", default=False),
    Column("submitted", "Submitted", "str", width=110),
    Column("id", "Entry", "str", width=150),
]


def category_column(key: str) -> Column:
    return Column(key, key[3:], "number", width=max(90, 10 * len(key[3:]) + 24))


def category_ci_columns(key: str) -> list[Column]:
    name = key[3:]
    return [Column(f"{key}_ci_low", f"{name} CI low", "number", width=max(120, 10 * len(name) + 80)),
            Column(f"{key}_ci_high", f"{name} CI high", "number", width=max(120, 10 * len(name) + 80))]


def speedup_columns(key: str) -> list[Column]:
    """The best measured speedup at one ISL bucket and the concurrency it was reached at."""
    isl = key.split("_")[1]
    return [Column(key, f"Speedup {isl} (best)", "number", width=140),
            Column(f"{key}_at", f"at concurrency ({isl})", "number", width=140)]


SORTABLE = {c.header: c.key for c in IDENTITY + ACCEPTANCE + PHASES + TRAILING}
