"""Rendering is defensive: whatever a stored entry holds, the board's rows and its DataFrame build
(hypothesis over arbitrary JSON metadata and metrics), so one bad row can never take the page down."""
from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speedbench.leaderboard import board
from speedbench.leaderboard.store import Entry

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                    max_leaves=25)
KEYS = st.sampled_from(["acceptance", "points", "speedup", "per_category", "acceptance_length", "isl", "role",
                        "speedup_measured", "concurrency", "acceptance_length_ci", "model", "draft_length"])
SHAPED = st.dictionaries(KEYS, JSON | st.lists(st.dictionaries(KEYS, JSON, max_size=5), max_size=3), max_size=6)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(metadata=SHAPED, metrics=SHAPED, warnings=st.lists(JSON, max_size=3), submitted=JSON)
def test_any_stored_entry_renders(metadata, metrics, warnings, submitted):
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    from sbspace import populate

    entry = Entry(id="sb-000000000001", bundle_sha256="x", archive_sha256="x", submitted_at=submitted,
                  schema_version=1, metadata=metadata, metrics=metrics, metrics_version="1", warnings=warnings)
    rows = board.safe_rows([entry])
    assert len(rows) == 1
    frame, datatypes, widths = populate.board_frame(rows, search="a", sort_by="Mean AL")
    assert len(frame.columns) == len(datatypes) == len(widths)
    board.pareto_points([entry])  # Compare's plot
