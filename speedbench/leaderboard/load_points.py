"""Plausibility of a run's load points (issue 32): what a label and a concurrency can be.

A load point is what ``speedbench run`` writes (``client/run/options.py``): ``c<N>``, a closed
loop at concurrency N, or ``r<rate>``, an open loop at ``rate`` requests/s. The board refuses:

- ``point.label``: a label that is not one of those two plain forms (``^c[1-9][0-9]{0,5}$`` or
  ``^r`` and a positive decimal number, 16 characters at most): a label is shown in Compare's
  tooltips, so markup or free text has no place there;
- ``point.concurrency``: a requested concurrency (the records' ``requested_concurrency`` or the
  label's N) above ``MAX_CONCURRENCY`` (65,536: far above what one server batches; 2^62 is a
  forged number, not a measurement), or records whose ``requested_concurrency`` is not the N of
  their ``c<N>`` label;
- ``point.achieved_above_requested``: a closed-loop point whose achieved concurrency (Little's
  law, ``sum(E2E) / span``) is above ``ACHIEVED_SLACK x requested + 1``. A closed loop of N
  workers never has more than N requests in flight, so occupancy above N is impossible; the
  slack (1.1 x + 1) covers clock granularity and the overlap of a worker's last request with the
  span's end. A "c1" point at 690 achieved concurrency is refused.
"""
from __future__ import annotations

import re

from speedbench.leaderboard.schema import BundleRejected, shown

MAX_CONCURRENCY = 65_536
ACHIEVED_SLACK = 1.1
_CLOSED = re.compile(r"c([1-9][0-9]{0,5})")
_OPEN = re.compile(r"r(?=.*[1-9])[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?")


def check_label(label: str, requested: int | None, where: str) -> None:
    """One measured record's point label and requested concurrency (rules ``point.label``,
    ``point.concurrency``)."""
    closed = _CLOSED.fullmatch(label) if isinstance(label, str) and len(label) <= 16 else None
    if closed is None and not (isinstance(label, str) and len(label) <= 16 and _OPEN.fullmatch(label)):
        raise BundleRejected(f"load point {shown(label, 40)} is not c<concurrency> or r<rate>",
                             rule="point.label", where=where, field="run_point")
    label_n = int(closed.group(1)) if closed else None
    for value in (label_n, requested):
        if value is not None and value > MAX_CONCURRENCY:
            raise BundleRejected(f"requested concurrency {value} is above {MAX_CONCURRENCY}",
                                 rule="point.concurrency", where=where, field="requested_concurrency")
    if label_n is not None and requested is not None and requested != label_n:
        raise BundleRejected(f"requested_concurrency {requested} is not the {label_n} of load point {label}",
                             rule="point.concurrency", where=where, field="requested_concurrency")


def check_achieved(points: list[dict]) -> None:
    """Rule ``point.achieved_above_requested`` over the recomputed points (``concurrency``,
    ``achieved_concurrency``)."""
    for p in points:
        requested, achieved = p.get("concurrency"), p.get("achieved_concurrency")
        if requested and isinstance(achieved, float) and achieved > ACHIEVED_SLACK * requested + 1:
            raise BundleRejected(
                f"load point {p.get('point')}: achieved concurrency {achieved:.1f} is above the requested "
                f"{requested} (a closed loop never has more requests in flight than workers)",
                rule="point.achieved_above_requested", where=f"{p.get('run')}/records.jsonl")
