"""Population: the board table as a DataFrame, filtered and sorted, with its column types."""
from __future__ import annotations

import threading

import pandas as pd

from speedbench import settings
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


# A search longer than this is cut to it (a 4 MiB query was matched against every row: 29 s of CPU
# for eight of them); no identity field is longer than 120 characters.
MAX_SEARCH_CHARS = int(settings.leaderboard_limit("SPEEDBENCH_SEARCH_MAX_CHARS", 200, int))
MAX_SEARCH_WORDS = 16


def all_rows(store: LeaderboardStore) -> list[dict]:
    """Every entry's row; an unreadable stored entry is an error row, never an exception."""
    return board.safe_rows(*store.entries_and_problems())


class BoardCache:
    """The board's rows, filter choices and Compare's entry labels, rebuilt only when the store
    changed (``store.version()``): a page load read and parsed every stored entry (1.0 s of CPU at
    1,000 entries, 5.6 s at 5,000). A rebuild parses and builds rows only for the stored rows that
    changed since the last one (an upload adds one row; a verification changes one), so the first
    page load after an upload costs about what any other does. The rows are shared read-only by
    every request."""

    def __init__(self, store: LeaderboardStore):
        self.store = store
        self._lock = threading.Lock()
        self._version = None
        self._rows: list[dict] = []
        self._choices: dict = {}
        self._labels: list = []
        self._parsed: dict = {}  # (id, revision) -> Entry (LeaderboardStore.entries_and_problems)
        self._row_of: dict = {}  # entry id -> (the Entry its row was built from, the row)
        self.builds = 0  # how many times it was rebuilt (tests)
        self.rows_built = 0  # how many entry rows were built in all (tests)

    def _fresh(self) -> None:
        version = self.store.version()
        with self._lock:
            if version == self._version:
                return
            entries, problems = self.store.entries_and_problems(reuse=self._parsed)
            row_of = {}
            for entry in entries:
                known = self._row_of.get(entry.id)
                if known is None or known[0] is not entry:
                    known = (entry, board.safe_rows([entry])[0])
                    self.rows_built += 1
                row_of[entry.id] = known
            self._row_of = row_of
            self._rows = [row_of[e.id][1] for e in entries] + board.safe_rows((), problems)
            self._choices = filter_choices(self._rows)
            self._labels = [(board.entry_label(e), e.id) for e in entries]
            self._version = version
            self.builds += 1

    def rows(self) -> list[dict]:
        self._fresh()
        return self._rows

    def choices(self) -> dict:
        self._fresh()
        return self._choices

    def entry_labels(self) -> list:
        self._fresh()
        return self._labels


def bounded_search(search) -> str:
    """The search text as matched: a string, at most ``MAX_SEARCH_CHARS`` characters and
    ``MAX_SEARCH_WORDS`` words (anything longer is cut, never matched in full)."""
    text = search if isinstance(search, str) else ""
    return " ".join(text[:MAX_SEARCH_CHARS].split()[:MAX_SEARCH_WORDS])


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
    shown = board.filter_rows(rows, search=bounded_search(search), engines=_bounded(engines), methods=_bounded(methods),
                              families=_bounded(families), isl=isl if isinstance(isl, str) else None)
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


def _bounded(chosen) -> list[str]:
    """A filter's chosen values as the API sent them: at most 64 strings of at most 120 characters
    (a dropdown's choices are the board's own names; anything else matches nothing anyway)."""
    chosen = chosen if isinstance(chosen, (list, tuple)) else []
    return [c for c in chosen[:64] if isinstance(c, str) and len(c) <= 120]


def filter_choices(rows: list[dict]) -> dict[str, list[str]]:
    return {"engines": board.choices(rows, "engine"), "methods": board.choices(rows, "sd_method"),
            "families": board.choices(rows, "model_family"),
            "isls": ["any"] + [i for i in board.ISL_ORDER if any(i in r.get("isls", ()) for r in rows)]}
