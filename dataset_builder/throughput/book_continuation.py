"""High entropy: continue a Gutenberg novel from where a long passage stops.

Passages come from the same per-bucket deal as text sorting (one passage in three), so the two tiers
never share a passage within a bucket.
"""
from __future__ import annotations

from collections.abc import Sequence

from speedbench.dataset_builder.throughput.base import Rendered
from speedbench.dataset_builder.throughput.gutenberg import GutenbergPassageTask, book_titles

TAIL = ("\n\n[The passage stops here.]\n\nContinue the novel from exactly where the passage stops, "
        "in the same voice, style and period. Write at least 800 words of new story.\n")


class BookContinuation(GutenbergPassageTask):
    name = "book_continuation"
    tier = "high_entropy"
    deal = 1

    def render(self, units: Sequence[str]) -> Rendered:
        title, author = book_titles(str(self.sources))[units[0].split("#", 1)[0]]
        head = f"Here is a passage from the novel \"{title}\" by {author}.\n\n"
        return Rendered(head, self.unit_text(units[0]), TAIL)

    def row_source(self, units: Sequence[str]) -> str:
        return "gutenberg:" + units[0].split("#", 1)[0].removeprefix("gutenberg_dighums/")
