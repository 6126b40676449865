"""Low entropy: text sorting ("write the parts in order"), after Ada-LEval's TextSort.

A passage of a Gutenberg novel is split at paragraph (else sentence) boundaries into a
"before" part, four parts shown in a seeded random order, and an "after" part. The model must
write the four parts out in their original order, unchanged: the answer copies the prompt,
which is why this tier is low entropy. The "after" part is the body the length fit cuts.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from speedbench.dataset_builder.throughput.base import Rendered, stable_rng
from speedbench.dataset_builder.throughput.gutenberg import GutenbergPassageTask

# Where the parts start, as fractions of the passage (before | 4 parts | after).
CUTS = (0.06, 0.20, 0.34, 0.48, 0.62)
HEAD = ("You are given a section of a book. The section has been split into four parts, shown below "
        "in a random order, together with the text just before the section and the text just after it.\n"
        "Find the original order of the four parts and write them out, one after the other, in that "
        "order, without changing any word. Do not write the text before or after the section, and do "
        "not add any comment.\n\n")
TAIL = ("\n\n\nNow write the four parts in their original order, as one continuous text, and nothing else.\n")


def _boundary(text: str, position: int) -> int:
    """The nearest paragraph break at or after ``position`` (else a sentence end, else ``position``).

    The search looks at most 3% of the passage ahead, so the parts keep their planned sizes.
    """
    window = text[position:position + max(200, len(text) * 3 // 100)]
    for pattern in (r"\n\s*\n", r"[.!?][\"')\]]?\s"):
        match = re.search(pattern, window)
        if match:
            return position + match.end()
    return position


def split_passage(text: str) -> list[str]:
    """[before, part1, part2, part3, part4, after] in reading order."""
    cuts = [0]
    for fraction in CUTS:
        cut = _boundary(text, max(cuts[-1] + 1, int(len(text) * fraction)))
        cuts.append(min(cut, len(text)))
    cuts.append(len(text))
    return [text[a:b].strip() for a, b in zip(cuts, cuts[1:])]


class TextSorting(GutenbergPassageTask):
    name = "text_sorting"
    tier = "low_entropy"
    deal = 0

    def render(self, units: Sequence[str]) -> Rendered:
        before, *parts, after = split_passage(self.unit_text(units[0]))
        order = list(range(4))
        stable_rng("text_sorting", units[0]).shuffle(order)
        shown = "".join(f"Part {i + 1}:\n{parts[j]}\n\n\n" for i, j in enumerate(order))
        head = f"{HEAD}Before:\n{before}\n\n\n{shown}After:\n"
        return Rendered(head, after, TAIL)

    def row_source(self, units: Sequence[str]) -> str:
        return "gutenberg:" + units[0].split("#", 1)[0].removeprefix("gutenberg_dighums/")
