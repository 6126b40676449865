"""Population: the board table as a DataFrame, filtered and sorted, with its column types."""
from __future__ import annotations

import pandas as pd

from speedbench.leaderboard import board
from speedbench.leaderboard.store import LeaderboardStore
from sbspace.columns import (
    ACCEPTANCE,
    IDENTITY,
    PHASES,
    TRAILING,
    Column,
    category_ci_columns,
    category_column,
    speedup_columns,
)


def all_rows(store: LeaderboardStore) -> list[dict]:
    """Every entry's row; an unreadable stored entry is an error row, never an exception."""
    return board.safe_rows(*store.entries_and_problems())


def visible_columns(rows: list[dict], isl: str | None, show_ci: bool) -> list[Column]:
    columns = list(IDENTITY) + [c for c in ACCEPTANCE if c.default or show_ci]
    for key in board.category_columns(rows):
        columns.append(category_column(key))
        if show_ci:
            columns += category_ci_columns(key)
    phase_keys = board.phase_columns(rows)
    columns += [c for c in PHASES if c.key in phase_keys]
    for key in board.speedup_columns(rows, isl):
        columns += speedup_columns(key)
    columns += [c for c in TRAILING if c.default]
    return columns


def board_frame(rows: list[dict], *, search: str = "", engines=(), methods=(), families=(), isl: str | None = None,
                sort_by: str = "Mean AL", descending: bool = True, show_ci: bool = False):
    """(DataFrame, datatypes, column widths) for ``gr.Dataframe``: filtered, sorted, with display headers."""
    isl = isl if isl and isl != "any" else None
    shown = board.filter_rows(rows, search=search or "", engines=engines, methods=methods, families=families, isl=isl)
    columns = visible_columns(rows, isl, show_ci)
    by_header = {c.header: c.key for c in columns}
    shown = board.sort_rows(shown, by_header.get(sort_by, "al"), descending)
    frame = pd.DataFrame([[row.get(c.key) for c in columns] for row in shown], columns=[c.header for c in columns])
    for c in columns:
        if c.datatype == "number":
            frame[c.header] = pd.to_numeric(frame[c.header], errors="coerce").astype("float64")
        else:
            frame[c.header] = frame[c.header].astype(object).where(frame[c.header].notna(), "")
    return frame, [c.datatype for c in columns], [f"{c.width}px" for c in columns]


def filter_choices(rows: list[dict]) -> dict[str, list[str]]:
    return {"engines": board.choices(rows, "engine"), "methods": board.choices(rows, "sd_method"),
            "families": board.choices(rows, "model_family"),
            "isls": ["any"] + [i for i in board.ISL_ORDER if any(i in r.get("isls", ()) for r in rows)]}
