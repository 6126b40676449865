"""Passages of the public-domain Gutenberg novels, shared by text sorting and book continuation.

Each book (licence header and footer removed) is encoded once with o200k_base and cut into
non-overlapping windows of ``passage_tokens(N)`` tokens. Per bucket the windows are shuffled with
a seeded generator and dealt two to text sorting, one to book continuation, so no passage appears
twice in a bucket, not even across the two tiers. Unit id: ``<path>#t<start>-<end>`` (token offsets).
"""
from __future__ import annotations

import re
from functools import lru_cache

from speedbench.dataset_builder.throughput.base import stable_rng
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
