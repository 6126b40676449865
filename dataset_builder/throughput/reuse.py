"""How much source content is shared between the prompts of one tier and bucket.

Where the sources run out (the mixed tier at 16k/32k, dialogue at 32k), demonstrations and
dialogues are reused across prompts. We report it per tier and bucket as

    distinct_ratio = distinct source tokens / total source tokens

where each prompt contributes the token counts of the source units it contains (a demonstration,
a file, a passage, an answer), the total sums them over prompts, and the distinct count sums each
unit once. 1.0 means no unit appears twice; 0.5 means the average unit appears twice.
Instructions and padding are not source content and are not counted.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ReuseStatistics:
    prompts: int
    total_source_tokens: int
    distinct_source_tokens: int
    distinct_units: int
    total_units: int
    max_uses_of_one_unit: int

    @property
    def distinct_ratio(self) -> float:
        return self.distinct_source_tokens / self.total_source_tokens if self.total_source_tokens else 1.0

    def to_dict(self) -> dict:
        return {"prompts": self.prompts, "total_source_tokens": self.total_source_tokens,
                "distinct_source_tokens": self.distinct_source_tokens, "distinct_units": self.distinct_units,
                "total_units": self.total_units, "max_uses_of_one_unit": self.max_uses_of_one_unit,
                "distinct_ratio": round(self.distinct_ratio, 6)}


def reuse_statistics(prompt_units: Iterable[Sequence[str]], unit_tokens: Mapping[str, int]) -> ReuseStatistics:
    """Reuse over prompts, each given as the list of source unit ids it contains."""
    uses: dict[str, int] = {}
    prompts = total_tokens = total_units = 0
    for units in prompt_units:
        prompts += 1
        for unit in units:
            uses[unit] = uses.get(unit, 0) + 1
            total_tokens += unit_tokens[unit]
            total_units += 1
    distinct_tokens = sum(unit_tokens[unit] for unit in uses)
    return ReuseStatistics(prompts, total_tokens, distinct_tokens, len(uses), total_units,
                           max(uses.values(), default=0))
