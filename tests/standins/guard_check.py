"""The degenerate-speculation guard's flags on a real-engine point, checked against its own counts.

stories260K often ends in a short loop, and a Q4_0 draft of the same model may accept everything on
a short answer, so the real-engine tests allow the guard's flags, but only where the point's counts
(recomputed here from the shares) exceed the documented share."""
from __future__ import annotations

from speedbench.settings import DEGENERATE_SHARE

_SHARES = {"acceptance_pinned": ("pinned_all", "pinned_none", "pin_judged"),
           "degenerate_output": ("looping", None, "loop_judged")}


def guard_flags_justified(point: dict) -> list[str]:
    """The guard's flag kinds the point raised; asserts each is backed by a share above the threshold."""
    raised = [flag.split(":")[0] for flag in point["flags"] if flag.split(":")[0] in _SHARES]
    overall = point["degenerate"]["overall"]
    for kind in raised:
        first, second, judged = _SHARES[kind]
        hits = overall[first] + (overall[second] if second else 0)
        assert overall[judged] and hits > DEGENERATE_SHARE * overall[judged], (kind, overall)
    return raised
