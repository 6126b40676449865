"""Candidate pools per qualitative category: every adapter's rows, de-duplicated, optionally capped.

The cap keeps a build within minutes (embedding runs at roughly 40-150 texts/s on two cores): a
category with more than ``pool_cap`` candidates keeps a seeded sample balanced across its sources
(each source gets an equal share; a source with fewer candidates than its share gives the rest
to the others), so small sources are never drowned by large ones.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from speedbench.dataset_builder.sources import SourceFiles, all_adapters, specbench
from speedbench.schema import QUALITATIVE_CATEGORIES, DatasetRow

EMBED_HEAD_CHARS = 700
EMBED_TAIL_CHARS = 300


@dataclass
class CategoryPool:
    category: str
    rows: list[DatasetRow]                 # sorted by question_id
    available: int                         # candidates before the cap
    per_source: dict[str, int] = field(default_factory=dict)


def collect_candidates(files: SourceFiles, progress: bool = False) -> dict[str, list[DatasetRow]]:
    """All adapters' rows grouped by category; repeated ids or identical turns are kept once."""
    from tqdm.auto import tqdm

    by_category: dict[str, dict[str, DatasetRow]] = {c: {} for c in QUALITATIVE_CATEGORIES}
    seen_turns: set[tuple[str, ...]] = set()
    for adapter in tqdm(all_adapters(), desc="reading sources", unit="source", disable=not progress, leave=False):
        for row in adapter.candidates(files):
            if row.source == specbench.SOURCE:
                # Spec-Bench is what the split is compared against; a candidate from it would make
                # the "vs Spec-Bench" comparison partly a comparison with itself.
                raise ValueError(f"{adapter.__name__}: row {row.src_id} is from Spec-Bench, which is a "
                                 f"comparison set only and never a candidate")
            if row.category not in by_category:
                raise ValueError(f"{adapter.__name__}: row {row.src_id} has unknown category {row.category!r}")
            key = tuple(row.turns)
            if row.question_id in by_category[row.category] or key in seen_turns:
                continue
            seen_turns.add(key)
            by_category[row.category][row.question_id] = row
    return {c: [rows[q] for q in sorted(rows)] for c, rows in by_category.items()}


def balanced_sample(groups: list[str], cap: int, rng: np.random.Generator) -> np.ndarray:
    """Indices (sorted) of at most ``cap`` items, an equal share per group, random within a group."""
    members: dict[str, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        members[group].append(index)
    if len(groups) <= cap:
        return np.arange(len(groups))
    ordered = sorted(members.items(), key=lambda item: (len(item[1]), item[0]))
    chosen: list[int] = []
    remaining = cap
    for position, (_, indices) in enumerate(ordered):
        share = remaining // (len(ordered) - position)
        take = min(len(indices), share)
        chosen += rng.permutation(np.asarray(indices))[:take].tolist()
        remaining -= take
    return np.sort(np.asarray(chosen, dtype=np.int64))


def cap_pool(category: str, rows: list[DatasetRow], pool_cap: int, seed: int) -> CategoryPool:
    available = len(rows)
    if pool_cap and len(rows) > pool_cap:
        rng = np.random.default_rng([seed, QUALITATIVE_CATEGORIES.index(category), 1])
        rows = [rows[i] for i in balanced_sample([r.source for r in rows], pool_cap, rng)]
    per_source: dict[str, int] = defaultdict(int)
    for row in rows:
        per_source[row.source] += 1
    return CategoryPool(category, rows, available, dict(sorted(per_source.items())))


def embedding_text(row: DatasetRow) -> str:
    """What is embedded for a row: its turns (roleplay: without the role instruction), long prompts cut to head and tail.

    The tail keeps the question of long RAG / summarization prompts; the cut keeps embedding time
    bounded (the paper's model reads up to 8k tokens; USE is meant for sentences and paragraphs).
    """
    turns = list(row.turns)
    if row.category == "roleplay":
        # The role instruction is shared boilerplate (the reference sends it as a system prompt):
        # diversity is measured on what follows it.
        head, separator, rest = turns[0].partition("\n\n")
        if separator and rest.strip():
            turns[0] = rest
    text = "\n\n".join(turns)
    if len(text) <= EMBED_HEAD_CHARS + EMBED_TAIL_CHARS:
        return text
    return text[:EMBED_HEAD_CHARS] + "\n...\n" + text[-EMBED_TAIL_CHARS:]
