"""Comparison: per-category AL side by side, paired differences, Pareto curves of chosen entries."""
from __future__ import annotations

import pandas as pd

from speedbench.leaderboard import board
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import LeaderboardStore

MAX_ENTRIES = 6
# every ISL bucket, whatever the board held at start: an API call is checked against the choices the
# app was built with (a dropdown update reaches only the page that asked for it)
PARETO_ISLS = ["any", *board.ISL_ORDER]
PARETO_COLUMNS = ["entry", "user_tps", "output_tps", "concurrency", "client_lagged_pct"]
DIFF_COLUMNS = ["reference", "entry", "category", "al_reference", "al_entry", "difference", "ci_low", "ci_high",
                "paired_prompts"]


def entry_choices(store: LeaderboardStore) -> list[tuple[str, str]]:
    return [(board.entry_label(e), e.id) for e in store.entries()]


def compare(store: LeaderboardStore, ids: list[str], isl: str | None, admission=None):
    """(side-by-side AL, paired differences, Pareto points, note) for the chosen entry ids: each id
    once (in the order given), unknown ones left out, at most ``MAX_ENTRIES`` (the paired bootstrap
    costs CPU per pair: an API call naming one id ten times must not cost ten); each pair is read
    and compared under the app's ``admission`` control, like an upload."""
    wanted = list(dict.fromkeys(i for i in (ids or []) if isinstance(i, str)))
    entries = [e for e in (store.get(i) for i in wanted[:MAX_ENTRIES]) if e is not None]
    if len(entries) < 2:
        empty = pd.DataFrame()
        return empty, pd.DataFrame(columns=DIFF_COLUMNS), pd.DataFrame(columns=PARETO_COLUMNS), \
            "Pick two or more entries."
    try:
        side = pd.DataFrame(board.per_category_side_by_side(entries))
        diffs = pd.DataFrame(board.paired_differences(store, entries, admission), columns=DIFF_COLUMNS)
    except BundleRejected as exc:  # over the budget an upload is held to (budget.cpu / budget.memory)
        return pd.DataFrame(), pd.DataFrame(columns=DIFF_COLUMNS), pd.DataFrame(columns=PARETO_COLUMNS), \
            f"These entries were not compared: {exc}"
    except Exception as exc:  # an entry the board cannot read must not break the tab
        return pd.DataFrame(), pd.DataFrame(columns=DIFF_COLUMNS), pd.DataFrame(columns=PARETO_COLUMNS), \
            f"These entries cannot be compared ({type(exc).__name__})."
    isl = isl if isl and isl != "any" else None
    pareto = pd.DataFrame(board.pareto_points(entries, isl), columns=PARETO_COLUMNS + ["on_frontier"])
    note = (f"Differences are AL(entry) - AL({entries[0].id}) over the prompts both ran, with paired bootstrap "
            "95% CIs.")
    if len(wanted) > MAX_ENTRIES:
        note += f" Only the first {MAX_ENTRIES} entries are compared."
    if pareto.empty:
        note += " No throughput points to plot for this selection."
    return side, diffs, pareto[PARETO_COLUMNS], note
