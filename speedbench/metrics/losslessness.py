"""Losslessness: does speculative decoding reproduce the baseline's tokens?

At temperature 0 speculative decoding is lossless in exact arithmetic: the target model verifies
every draft, so the output must equal the baseline's (autoregressive) output token for token. In
practice batched kernels are not bitwise deterministic (a different batch shape or a verification
step over several positions changes the reduction order, and a near-tie between two logits can
flip), so a small share of requests that diverge late is expected, not a bug. The check therefore
flags, never rejects.

For request r with SD output ``a`` and baseline output ``b`` (token ids of the same prompt):

    first_divergence(r) = min{ i : a_i != b_i }              (over i < min(|a|, |b|))
                        = min(|a|, |b|)  if one is a proper prefix of the other
                        = None           if a == b
    share_identical     = |{r : a == b}| / |compared requests|

Which requests are compared (:func:`pair_records`, used by the report and the leaderboard): the
same question and turn in both runs, both successful, with identical prompt ids
(``prompt_sha256``: a later turn whose history already diverged has another prompt), and token
ids in both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from speedbench.records import IDS_FROM_ENGINE

NONDETERMINISM_NOTE = (
    "At temperature 0 speculative decoding must reproduce the baseline's tokens; batched GPU kernels are not "
    "bitwise deterministic (batch shape and multi-position verification change reduction order, near-ties "
    "flip), so a small share of late divergences is expected. Flagged, not rejected.")


def first_divergence(sd_ids: Sequence[int], baseline_ids: Sequence[int]) -> int | None:
    """Index of the first token where the two outputs differ (module doc); None when identical."""
    a = np.asarray(sd_ids, dtype=np.int64)
    b = np.asarray(baseline_ids, dtype=np.int64)
    n = min(a.size, b.size)
    differ = np.flatnonzero(a[:n] != b[:n])
    if differ.size:
        return int(differ[0])
    return None if a.size == b.size else int(n)


@dataclass
class RequestDivergence:
    key: str
    first_divergence: int | None
    sd_tokens: int
    baseline_tokens: int

    @property
    def identical(self) -> bool:
        return self.first_divergence is None


@dataclass
class LosslessnessSummary:
    num_compared: int
    num_identical: int
    share_identical: float | None
    requests: list[RequestDivergence] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # why some requests were not compared
    note: str = NONDETERMINISM_NOTE

    @property
    def divergent(self) -> list[RequestDivergence]:
        return [r for r in self.requests if not r.identical]


def compare_outputs(sd: dict[str, Sequence[int]], baseline: dict[str, Sequence[int]],
                    skipped: dict[str, int] | None = None) -> LosslessnessSummary:
    """Compare the outputs of the requests both runs hold (keyed alike: the same prompt)."""
    requests = [RequestDivergence(key, first_divergence(sd[key], baseline[key]), len(sd[key]), len(baseline[key]))
                for key in sorted(set(sd) & set(baseline))]
    identical = sum(r.identical for r in requests)
    return LosslessnessSummary(num_compared=len(requests), num_identical=identical,
                               share_identical=identical / len(requests) if requests else None,
                               requests=requests, skipped=dict(skipped or {}))


def summary_fields(summary: LosslessnessSummary, sources: set[str]) -> dict[str, Any]:
    """The figures of one comparison as the report and the leaderboard store them: counts, share
    identical, earliest and median first divergence, where the ids came from, the skip reasons."""
    firsts = sorted(r.first_divergence for r in summary.divergent)
    return {"num_compared": summary.num_compared, "num_identical": summary.num_identical,
            "share_identical": summary.share_identical, "num_divergent": len(firsts),
            "earliest_divergence": firsts[0] if firsts else None,
            "median_divergence": firsts[len(firsts) // 2] if firsts else None,
            "ids": IDS_FROM_ENGINE if sources == {IDS_FROM_ENGINE} else "+".join(sorted(sources)) or None,
            "skipped": summary.skipped}


def pair_records(sd: Iterable[Any], baseline: Iterable[Any]) -> tuple[dict, dict, dict[str, int], set[str]]:
    """(SD ids, baseline ids, skipped reasons, id sources) of the requests both runs hold (module doc).

    Records are ``speedbench.records.TurnRecord``-like; keys are ``"<question_id>/<turn_index>"``.
    """
    sd_by = {f"{r.question_id}/{r.turn_index}": r for r in sd}
    base_by = {f"{r.question_id}/{r.turn_index}": r for r in baseline}
    sd_ids: dict[str, Sequence[int]] = {}
    base_ids: dict[str, Sequence[int]] = {}
    skipped: dict[str, int] = {}
    sources: set[str] = set()
    for key in sorted(set(sd_by) | set(base_by)):
        a, b = sd_by.get(key), base_by.get(key)
        if a is None or b is None:
            reason = "missing_in_baseline" if b is None else "missing_in_sd"
        elif not (a.ok and b.ok):
            reason = "failed"
        elif a.prompt_sha256 != b.prompt_sha256:
            reason = "prompt_differs"
        elif a.output_token_ids is None or b.output_token_ids is None:
            reason = "no_token_ids"
        else:
            sd_ids[key], base_ids[key] = a.output_token_ids, b.output_token_ids
            sources |= {a.output_token_ids_source or "?", b.output_token_ids_source or "?"}
            continue
        skipped[reason] = skipped.get(reason, 0) + 1
    return sd_ids, base_ids, skipped, sources
