"""A run's speculation profile: ``speculation_profile.json`` in NVIDIA specdec_bench's schema 1.0.

The profile is what a system benchmark or a simulator loads to replay a drafter's acceptance
(InferenceX, vLLM's synthetic rejection sampler, Dynamo's mocker). With ``h_0..h_K`` the steps
that accepted exactly ``j`` of K drafts (over drafted steps, :mod:`speedbench.metrics.acceptance.steps`),
``n = sum_j h_j``:

- marginal rate of position i (vLLM synthetic's convention): ``P(>= i) = sum_{j>=i} h_j / n``;
- conditional rate (Dynamo's): ``AR_i = P(>= i) / P(>= i-1)``, ``P(>= 0) = 1``;
- per-step mean AL (``mean_accept_length``): ``1 + sum_j j h_j / n``, which the identity
  ``AL = 1 + sum_i P(>= i)`` checks (``validation.mean_consistency``);
- per-request mean AL (``mean_accept_length_per_request``): the mean of each request's AL, which
  weights a short request like a long one (the two differ; specdec_bench's 2.4733 vs 2.5467).

Rates need every drafted step to have offered K drafts: K counts as fixed unless a request
drafted fewer than ``S x K`` tokens in its ``S`` drafted steps, or, where the engine never drafts past
``max_tokens`` (llama.cpp drafts ``min(K, r - 1)`` with ``r`` tokens left; its chunks are steps),
fewer than :func:`capped_draft_tokens`. Then K varied (llama.cpp's ``--draft-p-min`` stops a draft
early) and the per-position rates are written as null with the reason, never computed as if K
were fixed; the mean ALs stay. The per-step definitions for a varying K are not built yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from speedbench.metrics.acceptance.formulas import (
    acceptance_length_from_histogram,
    acceptance_length_from_marginal,
    conditional_from_marginal,
    marginal_from_histogram,
)

SCHEMA_VERSION = "1.0"
CONSISTENCY_TOLERANCE = 0.02  # specdec_bench's: |1 + sum P(>= i) - AL| above it fails the check
# Methods whose K-draft is a prefix of their (K+1)-draft: one K's marginals extrapolate to smaller K.
CHAIN_METHODS = frozenset({"draft_model", "eagle", "eagle3", "synthetic"})
# engine.json's ``speculation`` -> the profile's ``method``.
METHODS = {"draft": "draft_model", "draft-tree": "draft_model_tree", "synthetic": "synthetic"}


@dataclass(frozen=True)
class StepGroup:
    """One group of requests (a run, or a category): the histogram over drafted steps and the
    per-request ALs, with what the fixed-K check needs (module doc)."""

    histogram: list[int] | None  # h_0..h_K, None when no source gives one
    acceptance_length: float  # per-step mean AL of the source
    acceptance_length_per_request: float | None
    k_varied: str | None  # the reason K is not fixed, None when it is


def capped_draft_tokens(chunk_sizes, k: int, max_tokens: int) -> int:
    """Drafts a fixed-K engine proposes when it never drafts past ``max_tokens`` (llama.cpp): before
    a step with ``r`` tokens left it drafts ``min(K, r - 1)``. ``chunk_sizes``: the prefill's chunk,
    then one per decode step."""
    sizes = np.asarray(chunk_sizes, dtype=np.int64)
    if sizes.size < 2:
        return 0
    before = sizes[0] + np.concatenate([[0], np.cumsum(sizes[1:-1])])  # tokens out before each decode step
    return int(np.clip(np.minimum(k, max_tokens - before - 1), 0, None).sum())


def k_variation(drafted_tokens, expected_tokens) -> str | None:
    """Why K is not fixed over these requests: one drafted fewer than the ``expected_tokens`` a fixed K
    gives (``S x K``, or :func:`capped_draft_tokens` where ``max_tokens`` capped the drafts); None if fixed.
    More drafts than expected is not a varying K but records that contradict themselves (the
    consistency rule ``stats.drafted_vs_steps`` flags them in results.json)."""
    pairs = list(zip(drafted_tokens, expected_tokens))
    if any(d is None for d, _ in pairs):
        return "the engine does not report every request's drafted tokens"
    off = [(d, e) for d, e in pairs if e is None or d < e]
    if off:
        d, e = off[0]
        return (f"the draft length varied: {len(off)} of {len(pairs)} request(s) drafted fewer tokens than a fixed K "
                f"gives (e.g. {d} tokens where a fixed K drafts {e})")
    return None


def rates(histogram) -> tuple[list[float], list[float], float]:
    """(conditional, marginal, per-step AL) of ``h_0..h_K`` (module doc)."""
    h = np.asarray(histogram, dtype=np.float64)
    marginal = marginal_from_histogram(h)
    return (conditional_from_marginal(marginal).tolist(), marginal.tolist(),
            float(acceptance_length_from_histogram(h)))


def _checks(al: float, marginal: list[float] | None) -> dict[str, Any] | None:
    if marginal is None:
        return None
    implied = float(acceptance_length_from_marginal(marginal))
    rising = [{"position": i, "value": marginal[i], "previous": marginal[i - 1]}
              for i in range(1, len(marginal)) if marginal[i] > marginal[i - 1] + 1e-12]
    return {"mean_consistency": {"implied_mean_accept_length": implied, "reported_mean_accept_length": al,
                                 "abs_delta": abs(implied - al), "tolerance": CONSISTENCY_TOLERANCE,
                                 "passed": abs(implied - al) <= CONSISTENCY_TOLERANCE},
            "marginal_monotonicity": {"passed": not rising, "violations": rising}}


def group_figures(group: StepGroup) -> dict[str, Any]:
    """The per-position rates and means of one group, rates null with the reason where K varied."""
    out: dict[str, Any] = {"mean_accept_length": group.acceptance_length,
                           "mean_accept_length_per_request": group.acceptance_length_per_request,
                           "conditional_accept_rates": None, "marginal_accept_rates": None,
                           "acceptance_length_histogram": None, "rates_unavailable_reason": None}
    if group.k_varied:
        out["rates_unavailable_reason"] = group.k_varied
    elif group.histogram is None or sum(group.histogram) == 0:
        out["rates_unavailable_reason"] = "no per-step histogram: no source counted steps by drafts accepted"
    else:
        conditional, marginal, al = rates(group.histogram)
        out.update(conditional_accept_rates=conditional, marginal_accept_rates=marginal, mean_accept_length=al,
                   # keyed by acceptance length (tokens per step, the bonus token included), as specdec_bench's
                   acceptance_length_histogram={str(j + 1): int(n) for j, n in enumerate(group.histogram)})
    out["validation"] = _checks(out["mean_accept_length"], out["marginal_accept_rates"])
    return out


def build_profile(overall: StepGroup, categories: dict[str, StepGroup], k: int, *, method: str | None,
                  draft_checkpoint: dict | None, target_model: dict | None,
                  measurement_conditions: dict[str, Any]) -> dict[str, Any]:
    """The ``speculation_profile.json`` payload (schema 1.0 fields, then ours: ``rates_unavailable_reason``)."""
    figures = group_figures(overall)
    return {
        "schema_version": SCHEMA_VERSION, "measured": True, "method": method,
        "draft_checkpoint": draft_checkpoint, "target_model": target_model,
        "num_speculative_tokens": k, "block_size": None, "max_supported_k": k,
        "verification_method": "longest_prefix",  # every engine here verifies the longest accepted prefix
        "conditional_accept_rates": figures["conditional_accept_rates"],
        "marginal_accept_rates": figures["marginal_accept_rates"],
        "mean_accept_length": figures["mean_accept_length"],
        "mean_accept_length_per_request": figures["mean_accept_length_per_request"],
        "accept_length_model": "chain_analytic" if method in CHAIN_METHODS else "measured_per_k",
        "accept_length_by_k": {str(k): figures["mean_accept_length"]},
        "acceptance_length_histogram": figures["acceptance_length_histogram"],
        "per_category": {name: {key: value for key, value in group_figures(group).items() if key != "validation"}
                         for name, group in sorted(categories.items())},
        "measurement_conditions": measurement_conditions,
        "validation": figures["validation"],
        "rates_unavailable_reason": figures["rates_unavailable_reason"],
    }


__all__ = ["ProfileFormatError", "SCHEMA_VERSION", "StepGroup", "build_profile", "capped_draft_tokens", "group_figures",
           "k_variation", "rates", "replay_rates"]


class ProfileFormatError(ValueError):
    """A speculation profile that cannot be replayed; the message names the file and the field."""


def replay_rates(profile: Any, where: str, category: str | None = None) -> list[float]:
    """The marginal rates ``P(>= 1..K)`` a synthetic engine replays from a profile (``where``: its
    file, for the messages; ``category``: that category's rates from ``per_category``). Checked:
    schema 1.0, K floats in [0, 1], non-increasing (what llama.cpp's and vLLM's synthetic modes accept)."""
    if not isinstance(profile, dict) or profile.get("schema_version") != SCHEMA_VERSION:
        raise ProfileFormatError(f"{where}: not a speculation profile of schema {SCHEMA_VERSION} "
                                 f"(schema_version: {profile.get('schema_version') if isinstance(profile, dict) else None!r})")
    figures, field_name = profile, "marginal_accept_rates"
    if category is not None:
        figures = (profile.get("per_category") or {}).get(category)
        field_name = f"per_category.{category}.marginal_accept_rates"
        if not isinstance(figures, dict):
            raise ProfileFormatError(f"{where}: no category {category!r} in per_category "
                                     f"({', '.join(sorted(profile.get('per_category') or {})) or 'none'})")
    values = figures.get("marginal_accept_rates")
    if values is None:
        raise ProfileFormatError(f"{where}: {field_name} is null ({figures.get('rates_unavailable_reason')})")
    ok = isinstance(values, list) and values and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0 for v in values)
    if not ok:
        raise ProfileFormatError(f"{where}: {field_name} must be a non-empty list of numbers in [0, 1]")
    k = profile.get("num_speculative_tokens")
    if k != len(values):
        raise ProfileFormatError(f"{where}: {field_name} has {len(values)} values, num_speculative_tokens is {k!r}")
    if any(b > a + 1e-12 for a, b in zip(values, values[1:])):
        raise ProfileFormatError(f"{where}: {field_name} rises with position: {values}")
    # llama.cpp's check is exact, so a rounding rise of 1e-12 must not reach it
    return [float(min(v, min(values[:i + 1]))) for i, v in enumerate(values)]
