"""Per-step draft lengths: acceptance by position when K changes from step to step.

Engines change the draft length during a run (vLLM ``num_speculative_tokens_per_batch_size``,
SGLang's adaptive steps, TensorRT-LLM ``draft_len_schedule``, llama.cpp's ``--draft-p-min``,
n-gram lookups that match fewer than K tokens). A step ``s`` then *drafted* ``d_s`` tokens
(``0 <= d_s <= K_max``) and accepted ``a_s <= d_s`` of them. Per position ``i = 1..K_max``:

- ``D_i = #{s : d_s >= i}``                    steps that drafted position i;
- ``R_i = #{s : d_s >= i and a_s >= i - 1}``   steps that drafted position i and accepted every
  position before it (position i was *reached*);
- ``A_i = #{s : a_s >= i}``                    steps that accepted position i (so ``d_s >= i``).

Figures (speedbench's definitions, docs/metrics.md):

- conditional ``AR_i = A_i / R_i``: a step that drafted one token never counts against position 2.
  Where ``R_i = 0`` it is 0 as for a fixed K (the positions before i were always rejected), but
  NaN (null in JSON) where ``D_i = 0``: no step drafted position i, so nothing is known of it;
- marginal ``P_i = prod_{j <= i} AR_j`` (the product-limit estimate of "a step that drafts at
  least i tokens accepts at least i"): the same identity ``P_i = prod AR_j`` as for a fixed K;
- AL ``= 1 + sum_s a_s / n = 1 + sum_i A_i / n`` (unchanged), mean acceptance
  ``= sum_s a_s / sum_s d_s`` (accepted over drafted tokens).

With one K for every step ``D_i = n``, ``R_i = A_{i-1}`` (``A_0 = n``): the fixed-K formulas of
:mod:`speedbench.metrics.acceptance.formulas` exactly. vLLM's counters (and ``vllm bench
serve``) divide ``A_i`` by every drafted step, ``A_i / n``, which counts each step that drafted
fewer than i tokens as a rejection at i (:func:`vllm_position_rates`).

When K varied (drafted tokens < steps x K_max) but the engine gives no per-step counts, the
per-position rates are unknown: :func:`per_position_unknown_reason` says why, and nothing is
computed as if K were fixed.
"""
from __future__ import annotations

import numpy as np

# The rows of a position-count array (``position_counts``' second-to-last axis).
DRAFTED, REACHED, ACCEPTED = 0, 1, 2


def position_counts(drafted, accepted, k_max: int) -> np.ndarray:
    """``[D_i, R_i, A_i]`` for i = 1..K_max (shape ``(3, K_max)``) from one set of steps.

    ``drafted[s]`` / ``accepted[s]``: what step s drafted and accepted (module doc).
    """
    d = np.asarray(drafted, dtype=np.int64).reshape(-1)
    a = np.asarray(accepted, dtype=np.int64).reshape(-1)
    if d.shape != a.shape:
        raise ValueError(f"per-step drafted ({d.size}) and accepted ({a.size}) counts differ in length")
    if ((a < 0) | (a > d)).any():
        s = int(np.flatnonzero((a < 0) | (a > d))[0])
        raise ValueError(f"step {s}: accepted {a[s]} of {d[s]} drafted tokens")
    if d.size and int(d.max()) > k_max:
        raise ValueError(f"a step drafted {int(d.max())} tokens, more than K = {k_max}")
    i = np.arange(1, k_max + 1)
    drafted_at = d[:, None] >= i
    reached = drafted_at & (a[:, None] >= i - 1)
    accepted_at = a[:, None] >= i
    return np.stack([drafted_at.sum(axis=0), reached.sum(axis=0), accepted_at.sum(axis=0)]).astype(np.int64)


def conditional_from_position_counts(counts: np.ndarray) -> np.ndarray:
    """``AR_i = A_i / R_i``; 0 where position i was drafted but never reached, NaN where no step drafted
    it (module doc); vectorised over leading axes."""
    c = np.asarray(counts, dtype=np.float64)
    drafted, reached, accepted = c[..., DRAFTED, :], c[..., REACHED, :], c[..., ACCEPTED, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(reached > 0, accepted / np.where(reached > 0, reached, 1), 0.0)
    return np.where(drafted > 0, rates, np.nan)


def marginal_from_position_counts(counts: np.ndarray) -> np.ndarray:
    """``P_i = prod_{j <= i} AR_j`` (the product-limit estimate; ``A_i / n`` when K is fixed)."""
    return np.cumprod(conditional_from_position_counts(counts), axis=-1)


def vllm_position_rates(counts: np.ndarray, drafted_steps) -> np.ndarray:
    """vLLM's per-position rate ``A_i / n`` over all ``n`` drafted steps (its
    ``spec_decode_num_accepted_tokens_per_pos`` over ``spec_decode_num_drafts``): equal to
    :func:`marginal_from_position_counts` for a fixed K, lower wherever steps drafted fewer than i."""
    c = np.asarray(counts, dtype=np.float64)
    n = np.asarray(drafted_steps, dtype=np.float64)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, c[..., ACCEPTED, :] / np.where(n > 0, n, 1), 0.0)


def draft_length_counts(drafted, k_max: int) -> np.ndarray:
    """Steps by the number of tokens they drafted: entry ``k`` = ``#{s : d_s = k}``, k = 0..K_max."""
    d = np.asarray(drafted, dtype=np.int64).reshape(-1)
    return np.bincount(d, minlength=k_max + 1)[: k_max + 1].astype(np.int64) if d.size else np.zeros(k_max + 1, np.int64)


def draft_length_histogram(counts) -> dict[str, int]:
    """``{"K": steps}`` for every K that occurred (the results' ``draft_length_histogram``)."""
    return {str(k): int(c) for k, c in enumerate(np.asarray(counts).reshape(-1)) if c > 0}


def variable_draft_length(counts) -> bool:
    """Whether more than one draft length occurred (steps with a draft; a step without one, K = 0,
    is a decode step that did not speculate, not a different draft length)."""
    c = np.asarray(counts).reshape(-1)
    return int((c[1:] > 0).sum()) > 1


def per_position_unknown_reason(drafted_tokens, drafted_steps, k_max: int | None) -> str | None:
    """Why per-position rates cannot be computed (None when they can): the steps drafted fewer than
    ``steps x K_max`` tokens, so K varied, and no per-step counts say which steps drafted which position."""
    if k_max is None or drafted_tokens is None or drafted_steps is None:
        return None
    full = int(drafted_steps) * int(k_max)
    if int(drafted_tokens) < full:
        return (f"draft length varied ({int(drafted_tokens)} drafted tokens over {int(drafted_steps)} steps, "
                f"fewer than steps x K = {full}) and the engine reported no per-step drafted counts")
    return None


def check_position_identity(counts: np.ndarray, steps: int, accepted: int) -> list[str]:
    """``sum_i A_i = accepted`` and ``A_i <= R_i <= D_i <= steps``: AL = 1 + sum_i A_i / n holds."""
    c = np.asarray(counts, dtype=np.int64)
    problems = []
    if int(c[ACCEPTED].sum()) != int(accepted):
        problems.append(f"per-position accepted counts add up to {int(c[ACCEPTED].sum())}, not {int(accepted)}")
    if (c[ACCEPTED] > c[REACHED]).any() or (c[REACHED] > c[DRAFTED]).any() or (c[DRAFTED] > steps).any():
        problems.append(f"per-position counts out of order: {c.tolist()} over {steps} steps")
    return problems




__all__ = ["ACCEPTED", "DRAFTED", "REACHED", "check_position_identity", "conditional_from_position_counts",
           "draft_length_counts", "draft_length_histogram", "marginal_from_position_counts",
           "per_position_unknown_reason", "position_counts", "variable_draft_length",
           "vllm_position_rates"]
