"""The draft length K of a run, and whether it speculated: one precedence for every reader.

K is *declared* by what started the run, first found in this order:

1. the caller (the board's submission metadata, a ``--draft-length`` handed on, 0 for a baseline);
2. the run's options (``manifest.json`` ``options.draft_length``, i.e. ``speedbench run --draft-length``);
3. ``engine.json`` (``speedbench serve`` / ``demo`` describing the engine they started);
4. the server's own description (SGLang's ``server_info``: ``speculative_num_draft_tokens``
   counts the verified token too, so K is one less; else ``speculative_num_steps``; for a draft
   tree, ``speculative_eagle_topk`` > 1, K is the tree's depth ``speculative_num_steps``).

Without a declaration K is what the engine *reported*: the first request whose statistics name
it, else the point's Prometheus counters. Without either, the chunk source infers K from the
largest chunk and says so (:func:`speedbench.metrics.acceptance.from_records.record_acceptance`).

One rule on purpose differs: an engine's own per-request statistics are read at the K the engine
reports (:func:`statistics_draft_length`), since its histograms are ``h_0..h_K`` of that K (read
at another K they would be refused or padded into wrong rates). A declared K that differs is
flagged ``draft_length_mismatch``, and the board refuses such records (rule ``stats.k_mismatch``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


def _positive_int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _server_numbers(server_info) -> tuple[int, int | None, int | None]:
    """SGLang's top-k, num_steps and num_draft_tokens; a value that is not a whole number counts as
    absent (a stranger's manifest on the board holds anything)."""
    info = server_info if isinstance(server_info, dict) else {}
    topk, steps, tokens = (_positive_int(info.get(key)) for key in
                           ("speculative_eagle_topk", "speculative_num_steps", "speculative_num_draft_tokens"))
    return topk or 1, steps or None, tokens or None


def server_draft_length(server_info: dict | None) -> int | None:
    """K from the server's description of itself (SGLang's ``/get_server_info``), None without one."""
    topk, steps, tokens = _server_numbers(server_info)
    # A draft tree (top-k > 1): num_draft_tokens counts its nodes; at most its depth is accepted.
    if topk > 1 and steps:
        return steps
    if tokens:
        return max(0, tokens - 1) or None
    return steps or None


def server_draft_nodes(server_info: dict | None) -> int | None:
    """Draft tokens one verify proposes when the server drafts a tree (SGLang
    ``speculative_eagle_topk`` > 1: ``speculative_num_draft_tokens - 1`` nodes, K its depth); None
    for a chain or n-gram, which propose at most K per verify."""
    topk, _, tokens = _server_numbers(server_info)
    return (max(0, tokens - 1) or None) if topk > 1 and tokens else None


def declared_draft_length(*, given: int | None = None, options: dict | None = None, engine_info: dict | None = None,
                          server_info: dict | None = None) -> int | None:
    """K as the run declared it (module doc, steps 1-4), None when nothing declared it."""
    if given is not None:
        return int(given)
    if (options or {}).get("draft_length") is not None:
        return int(options["draft_length"])
    if engine_info and engine_info.get("speculation"):
        if engine_info["speculation"] == "none":
            return 0
        k = _positive_int(engine_info.get("draft_length"))
        if k:
            return k
    return server_draft_length(server_info)


def reported_draft_length(records: Iterable) -> int | None:
    """K as the engine reported it in the first record whose statistics name it."""
    return next((r.engine_stats.draft_length for r in records if r.engine_stats and r.engine_stats.draft_length),
                None)


def resolve_draft_length(declared: int | None, reported: int | None = None, counters: int | None = None) -> int | None:
    """The one precedence: declared, else reported by the engine's records, else by its counters."""
    for k in (declared, reported, counters):
        if k is not None:
            return int(k)
    return None


def statistics_draft_length(records: Iterable, run_k: int | None) -> int | None:
    """The K an engine's own statistics are read at: the K it reports, else the run's (module doc)."""
    return reported_draft_length(records) or run_k


def declared_variable_draft_length(server_info: dict | None = None, engine_info: dict | None = None) -> str | None:
    """Why the run's draft length varies from step to step by its own description (None: nothing says so).

    SGLang's ``speculative_adaptive`` changes ``speculative_num_steps`` with the batch size and the
    acceptance, while its per-request ``spec_num_proposed_drafts`` is ``verify_ct x
    (speculative_num_draft_tokens - 1)`` of the configured value (``tokenizer_manager.py``), not a
    count, so no figure shows the variation; ``engine.json``'s ``draft_schedule`` (vLLM
    ``num_speculative_tokens_per_batch_size``) and ``draft_p_min`` (llama.cpp) say the same."""
    info = server_info if isinstance(server_info, dict) else {}
    if info.get("speculative_adaptive") is True:
        return ("SGLang runs with speculative_adaptive (the draft steps change with the batch size and the "
                "acceptance) and reports proposed drafts as verify steps x the configured draft tokens, not "
                "per step")
    engine = engine_info if isinstance(engine_info, dict) else {}
    if engine.get("draft_schedule"):
        return f"the engine ran a draft-length schedule ({engine['draft_schedule']})"
    if isinstance(engine.get("draft_p_min"), (int, float)) and not isinstance(engine.get("draft_p_min"), bool) \
            and engine["draft_p_min"] > 0:
        return f"the engine ends drafts early below draft_p_min = {engine['draft_p_min']}"
    return None


@dataclass(frozen=True)
class Speculation:
    """What a run measured: speculative or the baseline, the mode, K, and notes on any guess."""

    speculative: bool
    mode: str  # engine.json's "draft" / "ngram" / ..., "speculative" when not described, "none"
    draft_length: int | None  # None for a baseline, or when nothing declared or reported K
    notes: tuple[str, ...] = ()


def run_speculation(records: list, *, given: int | None = None, options: dict | None = None,
                    engine_info: dict | None = None, server_info: dict | None = None,
                    role: str | None = None) -> Speculation:
    """Whether a run speculated and at what K.

    ``role`` ("sd" / "baseline", the board's submission) decides when given; else ``engine.json``
    when it describes the speculation; else a declared K (0: the baseline) or any request that
    reported drafted tokens.
    """
    declared = declared_draft_length(given=given, options=options, engine_info=engine_info,
                                     server_info=server_info)
    mode = str((engine_info or {}).get("speculation") or "")
    if role is not None:
        speculative = role == "sd"
    elif mode:
        speculative = mode != "none"
    else:
        drafted = any(r.engine_stats and (r.engine_stats.draft_tokens or 0) > 0 for r in records)
        speculative = bool(declared) or (declared is None and drafted)
    if not speculative:
        note = () if role is not None or mode or declared == 0 else (
            "no request reported drafted tokens: treated as the autoregressive baseline",)
        return Speculation(False, "none", None, note)
    k = resolve_draft_length(declared, reported_draft_length(records))
    note = () if k else ("draft length not reported by the engine; inferred from step sizes where possible",)
    return Speculation(True, mode if mode and mode != "none" else "speculative", k, note)


__all__ = ["Speculation", "declared_draft_length", "declared_variable_draft_length", "reported_draft_length", "resolve_draft_length", "run_speculation",
           "server_draft_length", "statistics_draft_length"]
