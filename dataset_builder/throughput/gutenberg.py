"""Passages of the public-domain Gutenberg novels, shared by text sorting and book continuation.

Each book (licence header and footer removed) is encoded once with o200k_base and cut into
non-overlapping windows of ``passage_tokens(N)`` tokens. Per bucket the windows are shuffled with
a seeded generator and dealt two to text sorting, one to book continuation, so no passage appears
twice in a bucket, not even across the two tiers. Unit id: ``<path>#t<start>-<end>`` (token offsets).
"""
from __future__ import annotations

import random
import re
from functools import lru_cache

from speedbench.dataset_builder.throughput.base import TaskType, stable_rng
from speedbench.dataset_builder.throughput.sources import gutenberg_books
from speedbench.tokenization.o200k import o200k

PASSAGE = re.compile(r"^(?P<path>.+)#t(?P<start>\d+)-(?P<end>\d+)$")
# A passage holds a little more than N tokens so the fit cuts rather than pads.
PASSAGE_FILL = 1.08


def passage_tokens(n_tokens: int) -> int:
    return int(n_tokens * PASSAGE_FILL)


@lru_cache(maxsize=None)
def book_tokens(root: str) -> dict[str, list[int]]:
    encoding = o200k()
    return {path: encoding.encode_ordinary(text) for path, text in gutenberg_books(root)}


@lru_cache(maxsize=None)
def book_titles(root: str) -> dict[str, tuple[str, str]]:
    """(title, author) per book path, from the Gutenberg header lines."""
    titles = {}
    from pathlib import Path
    for path, _ in gutenberg_books(root):
        head = (Path(root) / path).read_text(encoding="utf-8", errors="replace")[:3000]
        title = re.search(r"^Title:\s*(.+)$", head, re.MULTILINE)
        author = re.search(r"^Author:\s*(.+)$", head, re.MULTILINE)
        titles[path] = (title[1].strip() if title else Path(path).stem,
                        author[1].strip() if author else Path(path).parent.name)
    return titles


@lru_cache(maxsize=None)
def dealt_passages(root: str, n_tokens: int, seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(passages for text sorting, passages for book continuation) at this bucket length."""
    size = passage_tokens(n_tokens)
    windows = []
    for path, tokens in book_tokens(root).items():
        for start in range(0, len(tokens) - size + 1, size):
            windows.append(f"{path}#t{start}-{start + size}")
    stable_rng("gutenberg", seed, n_tokens).shuffle(windows)
    # Two of every three passages go to text sorting: the low tier cannot reuse content, while
    # the high tier can fall back on dialogues (this matters at 16k/32k, where passages are few).
    return (tuple(w for i, w in enumerate(windows) if i % 3 != 2),
            tuple(w for i, w in enumerate(windows) if i % 3 == 2))


def passage_size(unit: str) -> int:
    """Tokens of a passage, from its id (the window was cut in tokens)."""
    match = PASSAGE.match(unit)
    if not match:
        raise ValueError(f"{unit!r} is not a Gutenberg passage id ('<path>#t<start>-<end>')")
    return int(match["end"]) - int(match["start"])


def passage_text(root: str, unit: str) -> str:
    match = PASSAGE.match(unit)
    if not match:
        raise ValueError(f"{unit!r} is not a Gutenberg passage id ('<path>#t<start>-<end>')")
    tokens = book_tokens(root).get(match["path"])
    if tokens is None:
        raise ValueError(f"{unit!r}: book {match['path']} is not in the source mirror")
    return o200k().decode(tokens[int(match["start"]):int(match["end"])])


class GutenbergPassageTask(TaskType):
    """A task over one passage of the per-bucket deal; ``deal`` picks the share (0: text sorting,
    1: book continuation), so the two tasks never share a passage within a bucket."""
    source = "gutenberg"
    license = "public domain"
    deal: int

    def __init__(self, sources, unit_tokens, seed: int = 0) -> None:
        super().__init__(sources, unit_tokens)
        self.seed = seed

    def _passages(self, n_tokens: int) -> tuple[str, ...]:
        return dealt_passages(str(self.sources), n_tokens, self.seed)[self.deal]

    def capacity(self, n_tokens: int) -> int | None:
        return len(self._passages(n_tokens))

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        return [(unit,) for unit in self._passages(n_tokens)[:count]]

    def unit_text(self, unit: str) -> str:
        return passage_text(str(self.sources), unit)

    def known_unit_tokens(self, unit: str) -> int | None:
        return passage_size(unit)
