"""Composition rules a category's selection must meet, as the paper describes the split, and their repair.

- **Multilingual**: no task type (the sub-category's first part: math, qa, summarization,
  translation) over ``MAX_TASK_SHARE`` (40%) of the category's rows, and at least
  ``MIN_LANGUAGES`` (23) languages where the pool has them.
- **Coding, Humanities, Math, STEM**: at least ``HARD_SHARE`` (80%) ``hard`` rows ("focused on
  hard problems, approximately 80%, while retaining easier tasks"), i.e. at most 20% of other
  difficulties, where the pool has enough hard candidates.
- **Multi-turn**: the paper's split is about 20% multi-turn. Only some sources have real
  multi-turn rows (MT-Bench-101's dialogues in QA, Reasoning and Math, CoSER scenes and RoleBench
  in Roleplay, consecutive MMLU-Pro questions in Humanities and STEM, SQuAD and XQuAD passages in
  RAG and Multilingual), so every category whose pool holds multi-turn candidates keeps at least
  ``MIN_MULTITURN_SHARE`` (20%, the paper's share) of its rows multi-turn where the pool and the
  other rules allow. Categories the selector already fills with more (QA: MT-Bench-101) make up
  for the three without dialogues (Coding, Summarization, Writing). Every forced row costs
  diversity, so the minimum is the paper's share and no more. Measured on default builds (mean
  pairwise similarity of the selection, over the 11 categories): unconstrained 13.9% multi-turn,
  0.1101; this rule 20.3%, 0.1128 (Humanities and STEM +0.005 each, Math +0.019: its 16 non-hard
  places); a 30% minimum gave 24.2%, 0.1139 (Humanities and STEM +0.010).

The selector (Algorithm 1) runs first, unconstrained. ``enforce`` then changes it only as much as
the rules need, by single swaps on the same objective ``f(S) = sum_{i<j in S} x_i . x_j``:

1. repair: while a group is over its cap, swap the (member of that group, allowed non-member)
   pair with the smallest increase of f; while languages are missing, swap in a row of a missing
   language for a member whose language is repeated, again the pair with the smallest increase;
2. refine: apply the best allowed swap (one that keeps every rule) while it lowers f by more than
   the selection's near-tie tolerance.

Swap deltas, ``Delta(o, c) = x_c . (s - x_o) - (x_o . s - x_o . x_o)``, are computed in float64;
ties within the tolerance go to the lowest candidate index, then the lowest position, as in the
selector, so rounding noise in the embeddings does not change the outcome. A selection that
already meets the rules and is swap-optimal is returned unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from speedbench.dataset_builder.selection.exact import TIE_TOLERANCE
from speedbench.schema import CATEGORIES_WITH_DIFFICULTY, DatasetRow

MAX_TASK_SHARE = 0.4
MIN_LANGUAGES = 23
HARD_SHARE = 0.8
HARD_CATEGORIES = CATEGORIES_WITH_DIFFICULTY   # the categories with a difficulty field
MIN_MULTITURN_SHARE = 0.2


@dataclass(frozen=True)
class Rules:
    """Per pool row a group label with a cap per label, and optionally a language per row with a minimum count."""
    description: str
    groups: np.ndarray                   # (N,) int label per pool row
    caps: np.ndarray                     # (labels,) the most rows a label may have
    group_names: tuple[str, ...]
    languages: np.ndarray | None = None  # (N,) int language per pool row
    min_languages: int = 0
    multiturn: np.ndarray | None = None  # (N,) bool: the row has more than one turn
    min_multiturn: int = 0


def task_of(row: DatasetRow) -> str:
    return row.sub_category.split("/")[0]


def rules_for(category: str, rows: list[DatasetRow], k: int) -> Rules | None:
    """The rules for ``category`` over its pool ``rows`` when ``k`` rows are selected (None: no rules)."""
    rules = _group_rules(category, rows, k)
    multiturn = np.array([r.multiturn for r in rows], dtype=bool)
    if not multiturn.any():
        return rules
    if rules is None:
        rules = Rules("", np.zeros(len(rows), dtype=np.int64), np.array([k], dtype=np.int64), ("any",))
    # What the group caps leave room for: multi-turn rows of a capped group count at most up to its cap.
    per_group = np.bincount(rules.groups[multiturn], minlength=len(rules.caps))
    minimum = min(math.ceil(MIN_MULTITURN_SHARE * k), int(np.minimum(per_group, rules.caps).sum()))
    description = "; ".join(d for d in (rules.description, f"at least {minimum} of {k} rows multi-turn "
                                         f"({MIN_MULTITURN_SHARE:.0%} where the pool allows)") if d)
    return replace(rules, description=description, multiturn=multiturn, min_multiturn=minimum)


def _group_rules(category: str, rows: list[DatasetRow], k: int) -> Rules | None:
    if category == "multilingual":
        names = tuple(sorted({task_of(r) for r in rows}))
        groups = np.array([names.index(task_of(r)) for r in rows], dtype=np.int64)
        cap = math.floor(MAX_TASK_SHARE * k)
        available = np.bincount(groups, minlength=len(names))
        if np.minimum(available, cap).sum() < k:       # too few task types to keep every one under the cap
            cap = k
        languages = sorted({r.language for r in rows})
        codes = np.array([languages.index(r.language) for r in rows], dtype=np.int64)
        return Rules(f"no task over {MAX_TASK_SHARE:.0%} of the rows (at most {cap} of {k}); "
                     f"at least {min(MIN_LANGUAGES, len(languages))} languages",
                     groups, np.full(len(names), cap, dtype=np.int64), names, codes,
                     min(MIN_LANGUAGES, len(languages), k))
    if category in HARD_CATEGORIES:
        groups = np.array([0 if r.difficulty == "hard" else 1 for r in rows], dtype=np.int64)
        hard_available = int((groups == 0).sum())
        target_hard = min(math.ceil(HARD_SHARE * k), hard_available)
        caps = np.array([k, k - target_hard], dtype=np.int64)
        return Rules(f"at least {target_hard} of {k} rows hard ({HARD_SHARE:.0%} where the pool allows)",
                     groups, caps, ("hard", "not hard"))
    return None


def violations(rules: Rules, chosen: np.ndarray) -> list[str]:
    """What the selection ``chosen`` breaks, in words (empty: it meets the rules)."""
    counts = np.bincount(rules.groups[chosen], minlength=len(rules.caps))
    found = [f"{rules.group_names[g]}: {counts[g]} rows, at most {rules.caps[g]}"
             for g in range(len(rules.caps)) if counts[g] > rules.caps[g]]
    if rules.languages is not None:
        distinct = len(set(rules.languages[chosen].tolist()))
        if distinct < rules.min_languages:
            found.append(f"{distinct} languages, at least {rules.min_languages}")
    if rules.multiturn is not None:
        multi = int(rules.multiturn[chosen].sum())
        if multi < rules.min_multiturn:
            found.append(f"{multi} multi-turn rows, at least {rules.min_multiturn}")
    return found


class _State:
    """S with its float64 similarity columns G[:, p] = X x_{S_p} and m = X s."""

    def __init__(self, x: np.ndarray, chosen: np.ndarray, rules: Rules):
        self.x = np.asarray(x, dtype=np.float64)
        self.chosen = np.array(chosen, dtype=np.int64)
        self.rules = rules
        self.member = np.zeros(len(x), dtype=bool)
        self.member[self.chosen] = True
        self.g = self.x @ self.x[self.chosen].T
        self.m = self.g.sum(axis=1)
        self.self_sim = np.einsum("ij,ij->i", self.x, self.x)
        self.counts = np.bincount(rules.groups[self.chosen], minlength=len(rules.caps))
        n_lang = 0 if rules.languages is None else int(rules.languages.max()) + 1
        self.lang_counts = (np.bincount(rules.languages[self.chosen], minlength=n_lang)
                            if rules.languages is not None else None)
        self.multi = int(rules.multiturn[self.chosen].sum()) if rules.multiturn is not None else 0

    def deltas(self, positions: np.ndarray) -> np.ndarray:
        """(positions, N) swap deltas; members and disallowed pairs are +inf."""
        out = self.chosen[positions]
        removal = self.m[out] - self.self_sim[out]
        delta = self.m[None, :] - self.g[:, positions].T - removal[:, None]
        delta[:, self.member] = np.inf
        delta[~self.allowed(positions)] = np.inf
        return delta

    def allowed(self, positions: np.ndarray) -> np.ndarray:
        rules = self.rules
        out_groups = rules.groups[self.chosen[positions]]
        room = self.counts < rules.caps
        ok = (rules.groups[None, :] == out_groups[:, None]) | room[rules.groups][None, :]
        if self.lang_counts is not None:
            distinct = int((self.lang_counts > 0).sum())
            if distinct <= rules.min_languages:
                out_lang = rules.languages[self.chosen[positions]]
                loses = self.lang_counts[out_lang] == 1
                gains = self.lang_counts[rules.languages] == 0
                same = rules.languages[None, :] == out_lang[:, None]
                ok &= ~loses[:, None] | same | gains[None, :]
        if rules.multiturn is not None and self.multi <= rules.min_multiturn:
            # at the minimum: a multi-turn member may only be replaced by another multi-turn row
            out_multi = rules.multiturn[self.chosen[positions]]
            ok &= ~out_multi[:, None] | rules.multiturn[None, :]
        return ok

    def swap(self, position: int, candidate: int) -> None:
        out = int(self.chosen[position])
        column = self.x @ self.x[candidate]
        self.m += column - self.g[:, position]
        self.g[:, position] = column
        self.member[out], self.member[candidate] = False, True
        self.chosen[position] = candidate
        self.counts[self.rules.groups[out]] -= 1
        self.counts[self.rules.groups[candidate]] += 1
        if self.lang_counts is not None:
            self.lang_counts[self.rules.languages[out]] -= 1
            self.lang_counts[self.rules.languages[candidate]] += 1
        if self.rules.multiturn is not None:
            self.multi += int(self.rules.multiturn[candidate]) - int(self.rules.multiturn[out])


def _pick(delta: np.ndarray, tolerance: float) -> tuple[int, int, float] | None:
    """(row of delta, candidate, value): lowest candidate, then lowest row, within tolerance of the best."""
    best = float(delta.min()) if delta.size else math.inf
    if not math.isfinite(best):
        return None
    rows, candidates = np.nonzero(delta <= best + tolerance)
    order = np.lexsort((rows, candidates))[0]
    return int(rows[order]), int(candidates[order]), float(delta[rows[order], candidates[order]])


def enforce(embeddings: np.ndarray, chosen: np.ndarray, rules: Rules | None,
            tolerance: float = TIE_TOLERANCE, max_swaps: int = 5_000) -> tuple[np.ndarray, int]:
    """(the selection meeting ``rules``, sorted; the number of swaps made)."""
    if rules is None:
        return np.sort(np.asarray(chosen, dtype=np.int64)), 0
    state = _State(embeddings, chosen, rules)
    swaps = 0
    everyone = np.arange(len(state.chosen))
    while swaps < max_swaps:                       # 1. repair, cheapest forced swap first
        over = np.flatnonzero(state.counts > rules.caps)
        if len(over):
            positions = everyone[rules.groups[state.chosen] == over[0]]
            delta = state.deltas(positions)
            delta[:, rules.groups == over[0]] = np.inf
        elif state.lang_counts is not None and int((state.lang_counts > 0).sum()) < rules.min_languages:
            positions = everyone[state.lang_counts[rules.languages[state.chosen]] >= 2]
            delta = state.deltas(positions)
            delta[:, state.lang_counts[rules.languages] > 0] = np.inf
        elif rules.multiturn is not None and state.multi < rules.min_multiturn:
            positions = everyone[~rules.multiturn[state.chosen]]
            delta = state.deltas(positions)
            delta[:, ~rules.multiturn] = np.inf
        else:
            break
        pick = _pick(delta, tolerance)
        if pick is None:
            break                                  # nothing left to swap in: the pool cannot meet the rule
        state.swap(int(positions[pick[0]]), pick[1])
        swaps += 1
    while swaps < max_swaps:                       # 2. refine under the rules
        pick = _pick(state.deltas(everyone), tolerance)
        if pick is None or not pick[2] < -tolerance:
            break
        state.swap(pick[0], pick[1])
        swaps += 1
    return np.sort(state.chosen), swaps
