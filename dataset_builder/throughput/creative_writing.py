"""High entropy: creative and professional writing requests from WritingBench.

A WritingBench query is itself the instruction (often with long reference material) and is never
cut. Most queries are short, so a query is used in a bucket only if it fills at least
``MIN_FILL`` of the prompt: the rest is the neutral padding. This keeps padding-dominated prompts
out of the split; the long buckets rely on dialogue and book continuation instead.
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cached_property

from speedbench.dataset_builder.throughput.base import Rendered, TaskType
from speedbench.dataset_builder.throughput.sources import jsonl_records

SUBSETS = ("length", "format", "style")
MIN_FILL = 0.5
TAIL = "\n"
CJK = re.compile(r"[\u4e00-\u9fff]")


class CreativeWriting(TaskType):
    name = "creative_writing"
    tier = "high_entropy"
    source = "X-PLUG/WritingBench"
    license = "Apache-2.0"

    @cached_property
    def queries(self) -> dict[str, str]:
        """unit id -> query, first occurrence of each distinct query across the three subsets."""
        queries: dict[str, str] = {}
        seen: set[str] = set()
        for subset in SUBSETS:
            for r in jsonl_records(str(self.sources / f"writingbench/{subset}_subset.jsonl")):
                query = r["query"].strip()
                if query and query not in seen:
                    seen.add(query)
                    queries[f"writingbench/{subset}:{r['index']}"] = query
        return queries

    def _eligible(self, n_tokens: int) -> list[str]:
        low, high = MIN_FILL * n_tokens, n_tokens - 8
        return [u for u in sorted(self.queries) if low <= self.unit_tokens(u) <= high]

    def capacity(self, n_tokens: int) -> int | None:
        return len(self._eligible(n_tokens))

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        eligible = self._eligible(n_tokens)
        rng.shuffle(eligible)
        return [(u,) for u in eligible[:count]]

    def unit_text(self, unit: str) -> str:
        return self.queries[unit]

    def render(self, units: Sequence[str]) -> Rendered:
        return Rendered(self.queries[units[0]], "", TAIL)

    def row_language(self, units: Sequence[str]) -> str:
        return "zh" if len(CJK.findall(self.queries[units[0]][:2000])) > 50 else "en"
