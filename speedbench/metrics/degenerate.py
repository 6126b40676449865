"""The degenerate-speculation guard: pinned acceptance and looping outputs, per request and per point.

Two failures make acceptance figures meaningless while looking fine:

- *pinned acceptance*: a request accepted every draft it was offered, or none, over at least
  ``PIN_MIN_STEPS`` steps that drafted (decode steps when the engine does not say which drafted,
  llama.cpp). A drafter whose logits turned NaN pins AL at exactly 1 or exactly K + 1; synthetic
  acceptance at rate 1 pins by construction. With ``D`` drafted tokens and ``A`` accepted:
  ``pinned_all = A >= D > 0``, ``pinned_none = A == 0 < D``. With K known, ``pinned_all`` also
  needs full drafts, ``D + K >= S x K`` over ``S`` steps (one short step allowed: llama.cpp caps the
  last draft at ``max_tokens``): drafts that end early (``--draft-p-min``, a draft-length
  schedule) and are all accepted are variable K, not a drafter pinned at K + 1;
- *looping output*: the last ``W = LOOP_WINDOW`` output token ids ``t`` repeat a pattern of period
  ``p <= LOOP_MAX_PERIOD``: ``t[i] == t[i + p]`` for every ``0 <= i < W - p`` (a two-token loop is
  trivially easy to draft, so it inflates acceptance). Outputs shorter than ``W`` ids are not judged.

A point's (and each category's) share is ``requests flagged / requests judged``; the point is
flagged (``acceptance_pinned``, ``degenerate_output``) when the share exceeds
``DEGENERATE_SHARE``. A flag is a warning, never a refusal. Settings: ``speedbench.settings``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np

from speedbench.metrics.acceptance.steps import record_steps
from speedbench.settings import DEGENERATE_SHARE, LOOP_MAX_PERIOD, LOOP_WINDOW, PIN_MIN_STEPS


def loop_period(token_ids, window: int = LOOP_WINDOW, max_period: int = LOOP_MAX_PERIOD) -> int | None:
    """The smallest ``p <= max_period`` with ``t[i] == t[i + p]`` over the last ``window`` ids, else None
    (None too when there are fewer than ``window`` ids)."""
    ids = np.asarray(token_ids if token_ids is not None else [], dtype=np.int64)
    if ids.size < window or window < 2:
        return None
    tail = ids[-window:]
    for period in range(1, min(max_period, window - 1) + 1):
        if np.array_equal(tail[:-period], tail[period:]):
            return period
    return None


def pinned(drafted_tokens: int | None, accepted_tokens: int | None, steps: int | None,
           min_steps: int = PIN_MIN_STEPS, draft_length: int | None = None) -> str | None:
    """``"all"`` when every draft was accepted (full drafts of ``draft_length`` when given), ``"none"``
    when none was, over at least ``min_steps`` steps; None otherwise or when the counts are unknown
    (module doc)."""
    if drafted_tokens is None or accepted_tokens is None or steps is None:
        return None
    if steps < min_steps or drafted_tokens <= 0:
        return None
    if accepted_tokens >= drafted_tokens:
        if draft_length and drafted_tokens + draft_length < steps * draft_length:
            return None  # drafts ended early and were accepted: variable K, AL is not pinned at K + 1
        return "all"
    return "none" if accepted_tokens == 0 else None


@dataclass
class GuardCounts:
    """One group's counts (a point, or one category of it)."""

    pin_judged: int = 0
    pinned_all: int = 0
    pinned_none: int = 0
    loop_judged: int = 0
    looping: int = 0

    @property
    def pinned_share(self) -> float | None:
        return (self.pinned_all + self.pinned_none) / self.pin_judged if self.pin_judged else None

    @property
    def looping_share(self) -> float | None:
        return self.looping / self.loop_judged if self.loop_judged else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "pinned_share": self.pinned_share, "looping_share": self.looping_share}


@dataclass
class DegenerateGuard:
    """A point's guard: overall and per category counts, and the flags (strings as in ``results.json``)."""

    overall: GuardCounts
    categories: dict[str, GuardCounts] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.to_dict(), "threshold": DEGENERATE_SHARE,
                "rules": {"loop_window": LOOP_WINDOW, "loop_max_period": LOOP_MAX_PERIOD,
                          "pin_min_steps": PIN_MIN_STEPS},
                "categories": {name: c.to_dict() for name, c in sorted(self.categories.items())}}


def _count(counts: GuardCounts, record, draft_length: int | None = None) -> None:
    steps = record_steps(record)
    if steps is not None:
        judged_steps = steps.drafted_steps if steps.drafted_steps is not None else steps.decode_steps
        k = (record.engine_stats.draft_length if record.engine_stats else None) or draft_length
        state = pinned(steps.drafted_tokens, steps.accepted_tokens, judged_steps, draft_length=k)
        if judged_steps is not None and judged_steps >= PIN_MIN_STEPS and (steps.drafted_tokens or 0) > 0:
            counts.pin_judged += 1
        counts.pinned_all += state == "all"
        counts.pinned_none += state == "none"
    ids = record.output_token_ids
    if ids is not None and len(ids) >= LOOP_WINDOW:
        counts.loop_judged += 1
        counts.looping += loop_period(ids) is not None


def _over(counts: GuardCounts, share_name: str) -> bool:
    share = getattr(counts, share_name)
    return share is not None and share > DEGENERATE_SHARE


def _categories_over(categories: dict[str, GuardCounts], share_name: str) -> str:
    over = [f"{name} {getattr(c, share_name):.0%}" for name, c in sorted(categories.items()) if _over(c, share_name)]
    return f"; categories over it: {', '.join(over)}" if over else ""


def guard_flags(guard: DegenerateGuard, synthetic: bool = False) -> list[str]:
    """The point's warnings (module doc); ``synthetic``: the run replaced acceptance by synthetic rates."""
    flags, o = [], guard.overall
    if _over(o, "pinned_share"):
        note = (" (expected: this run's acceptance is synthetic)" if synthetic
                else " (a broken drafter, e.g. NaN logits, pins AL at 1 or K + 1)")
        flags.append(f"acceptance_pinned: {o.pinned_all + o.pinned_none} of {o.pin_judged} request(s) "
                     f"({o.pinned_share:.0%} > {DEGENERATE_SHARE:.0%}) accepted every draft ({o.pinned_all}) or none "
                     f"({o.pinned_none}) over >= {PIN_MIN_STEPS} steps{note}"
                     f"{_categories_over(guard.categories, 'pinned_share')}")
    if _over(o, "looping_share"):
        flags.append(f"degenerate_output: {o.looping} of {o.loop_judged} output(s) ({o.looping_share:.0%} > "
                     f"{DEGENERATE_SHARE:.0%}) end in a cycle (last {LOOP_WINDOW} tokens repeat a period <= "
                     f"{LOOP_MAX_PERIOD}); their acceptance is inflated"
                     f"{_categories_over(guard.categories, 'looping_share')}")
    return flags


def degenerate_guard(records: Iterable, synthetic: bool = False, draft_length: int | None = None) -> DegenerateGuard:
    """The guard over a point's successful, measured records (module doc); ``draft_length``: K when the
    engine's statistics do not name it (llama.cpp)."""
    overall, categories = GuardCounts(), defaultdict(GuardCounts)
    for record in records:
        _count(overall, record, draft_length)
        _count(categories[record.category], record, draft_length)
    guard = DegenerateGuard(overall, dict(categories))
    guard.flags = guard_flags(guard, synthetic)
    return guard


__all__ = ["DegenerateGuard", "GuardCounts", "degenerate_guard", "guard_flags", "loop_period", "pinned"]
