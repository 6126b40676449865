"""High entropy: continue a Gutenberg novel from where a long passage stops.

Passages come from the same per-bucket deal as text sorting (one passage in three), so the two tiers
never share a passage within a bucket.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

from speedbench.dataset_builder.throughput.base import Rendered, TaskType
from speedbench.dataset_builder.throughput.gutenberg import book_titles, dealt_passages, passage_size, passage_text

TAIL = ("\n\n[The passage stops here.]\n\nContinue the novel from exactly where the passage stops, "
        "in the same voice, style and period. Write at least 800 words of new story.\n")


class BookContinuation(TaskType):
    name = "book_continuation"
    tier = "high_entropy"
    source = "gutenberg"
    license = "public domain"

    def __init__(self, sources, unit_tokens, seed: int = 0) -> None:
        super().__init__(sources, unit_tokens)
        self.seed = seed

    def capacity(self, n_tokens: int) -> int | None:
        return len(dealt_passages(str(self.sources), n_tokens, self.seed)[1])

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        return [(unit,) for unit in dealt_passages(str(self.sources), n_tokens, self.seed)[1][:count]]

    def unit_text(self, unit: str) -> str:
        return passage_text(str(self.sources), unit)

    def known_unit_tokens(self, unit: str) -> int | None:
        return passage_size(unit)

    def render(self, units: Sequence[str]) -> Rendered:
        title, author = book_titles(str(self.sources))[units[0].split("#", 1)[0]]
        head = f"Here is a passage from the novel \"{title}\" by {author}.\n\n"
        return Rendered(head, self.unit_text(units[0]), TAIL)

    def row_source(self, units: Sequence[str]) -> str:
        return "gutenberg:" + units[0].split("#", 1)[0].removeprefix("gutenberg_dighums/")
