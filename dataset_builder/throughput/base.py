"""What a Throughput task type is, and the row recipe written into ``src_id``.

A task type (one module each: code completion, text sorting, exam QA, answer selection, dialogue
continuation, book continuation, creative writing) does two things:

- ``select(n_tokens, count, rng)``: choose, for ``count`` prompts, the source *units* each prompt
  is made of (a file, a passage, a demonstration, an answer...), distinct across prompts while
  the sources last;
- ``render(units)``: turn a unit list into ``head`` + ``body`` + ``tail`` text, deterministically.

The builder fits ``head + body + tail`` to exactly N tokens (``fit.py``) and records the unit
ids plus the two numbers the fit chose in ``src_id``::

    <unit>|<unit>|...@k=<body tokens kept>,pad=<padding characters>

so ``speedbench resolve`` can rebuild the identical prompt from the sources alone (the
placeholder export relies on it).
"""
from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

RECIPE = re.compile(r"^(?P<units>.+)@k=(?P<k>\d+),pad=(?P<pad>\d+)$", re.DOTALL)
UNIT_SEPARATOR = "|"


@dataclass(frozen=True)
class Rendered:
    head: str
    body: str
    tail: str


@dataclass(frozen=True)
class Recipe:
    units: tuple[str, ...]
    body_tokens: int
    padding_chars: int

    def to_src_id(self) -> str:
        for unit in self.units:
            if UNIT_SEPARATOR in unit or "@k=" in unit:
                raise ValueError(f"unit id {unit!r} contains a reserved character")
        return f"{UNIT_SEPARATOR.join(self.units)}@k={self.body_tokens},pad={self.padding_chars}"

    @classmethod
    def parse(cls, src_id: str) -> "Recipe":
        match = RECIPE.match(src_id)
        if not match:
            raise ValueError(f"src_id {src_id!r} is not a speed-bench throughput recipe "
                             "('<unit>|<unit>...@k=<n>,pad=<n>')")
        return cls(tuple(match["units"].split(UNIT_SEPARATOR)), int(match["k"]), int(match["pad"]))


class TaskType:
    """Base class; subclasses set the class attributes and implement ``select`` and ``render``."""

    name = ""              # the row's sub_category
    tier = ""              # low_entropy | mixed | high_entropy
    source = ""            # the row's source (dataset id)
    license = ""
    reuses_content = False  # True: may reuse units across prompts once the distinct ones run out

    def __init__(self, sources: Path, unit_tokens) -> None:
        self.sources = Path(sources)
        self.unit_tokens = unit_tokens   # callable: unit id -> o200k tokens of its text (cached)

    def capacity(self, n_tokens: int) -> int | None:
        """Most prompts with distinct content at this length; None when content may be reused."""
        return None

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        raise NotImplementedError

    def render(self, units: Sequence[str]) -> Rendered:
        raise NotImplementedError

    def unit_text(self, unit: str) -> str:
        """The source text of one unit (what the reuse statistics count)."""
        raise NotImplementedError

    def known_unit_tokens(self, unit: str) -> int | None:
        """A unit's o200k token count when known without encoding (None: count it)."""
        return None

    def row_source(self, units: Sequence[str]) -> str:
        return self.source

    def row_license(self, units: Sequence[str]) -> str:
        return self.license

    def row_language(self, units: Sequence[str]) -> str:
        return "en"

    def redistributable(self, units: Sequence[str]) -> bool:
        """False for rows built from sources that may not be redistributed (exported as placeholders)."""
        return True


def stable_rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded from the parts' text (the same parts give the same stream everywhere)."""
    key = "\x1f".join(str(part) for part in parts)
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


class UnitStream:
    """Hands out units in a seeded shuffled order; after the last one, a new shuffled pass (reuse).

    ``draw(exclude)`` skips units already in the prompt being built, so a prompt never holds the
    same unit twice; ``passes`` counts how many times the pool was started (1 = no reuse yet).
    """

    def __init__(self, units: Sequence[str], rng: random.Random, cycle: bool = True) -> None:
        if not units:
            raise ValueError("a unit stream needs at least one unit")
        self.units = list(units)
        self.rng = rng
        self.cycle = cycle
        self.order: list[str] = []
        self.position = 0
        self.passes = 0
        self._new_pass()

    def _new_pass(self) -> None:
        self.order = list(self.units)
        self.rng.shuffle(self.order)
        self.position = 0
        self.passes += 1

    def draw(self, exclude: set[str] | frozenset[str] = frozenset()) -> str | None:
        skipped = 0
        while True:
            if self.position >= len(self.order):
                if not self.cycle:
                    return None
                self._new_pass()
            unit = self.order[self.position]
            self.position += 1
            if unit not in exclude:
                return unit
            skipped += 1
            if skipped > 2 * len(self.units):
                return None  # every unit already in this prompt
