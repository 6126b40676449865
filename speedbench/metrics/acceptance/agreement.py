"""Counters as a source, and the like-for-like comparison of the acceptance sources.

- counters vs engine: the same quantities summed (drafted steps, drafted tokens, accepted
  tokens); engines count drafts accepted past ``max_tokens`` in both, so they match exactly on a
  clean run (vLLM 0.32.0: every client run agreed exactly). SGLang's counters give accepted
  drafts only as generation tokens - verify steps - requests, i.e. emitted ones: compared with
  the engine's sum less its drafts accepted past ``max_tokens``;
- chunks vs engine: decode steps. Chunks can only merge steps, never split them, so fewer chunk
  steps than engine decode steps means merged chunks (reported as ``merged_steps``, engine
  primary), and only *more* chunk steps than the engine counted is a disagreement. The engine's
  decode steps may undercount by up to K per request cut at ``max_tokens`` after partial
  drafting (``speedbench.metrics.acceptance.steps.derive_decode_steps``), which the comparison allows;
- counters vs chunks (no engine statistics): accepted tokens, only when no chunk was merged, with
  up to K drafts per capped request counted past ``max_tokens``.

A relative difference above the tolerance is listed under ``flags`` as ``disagreement``.
"""
from __future__ import annotations

from typing import Any

from speedbench.metrics.acceptance.counters import acceptance_from_counters
from speedbench.metrics.acceptance.formulas import acceptance_length_from_counts
from speedbench.metrics.acceptance.counter_sources import CounterAcceptance, counter_acceptance, snapshot_delta
from speedbench.metrics.acceptance.from_records import RecordAcceptance
from speedbench.records import MAX_TOKENS_REASONS


def counter_summary(engine: str, entry: dict | None, num_requests: int, placeholder_steps: int = 0,
                    draft_length: int | None = None) -> dict | None:
    """The ``counters`` source of one load point from its ``counters.jsonl`` entry (None if absent).

    ``placeholder_steps``: vLLM prefix-cache placeholder steps the point's records identify
    (``speedbench.metrics.acceptance.steps``); the counters count each as a drafted step of ``draft_length``
    drafted tokens that accepted none, so they are taken out here as from the engine's per-request
    figures (same definition for both sources), the uncorrected figures kept under ``uncorrected``."""
    if not entry:
        return None
    delta = (entry["delta"], entry.get("delta_per_position") or {}) if "delta" in entry else \
        snapshot_delta(entry.get("before"), entry.get("after"))
    if delta is None:
        return None
    counters = counter_acceptance(engine, delta[0], {int(k): v for k, v in delta[1].items()})
    if counters is None:
        return None
    result: dict[str, Any] = {"source": counters.source, "complete": bool(entry.get("complete")),
                              "raw_delta": {k: v for k, v in delta[0].items() if "spec" in k or "token" in k}}
    uncorrected = None
    if placeholder_steps and draft_length and None not in (counters.drafts, counters.draft_tokens):
        uncorrected = {"num_drafted_steps": int(counters.drafts), "num_draft_tokens": int(counters.draft_tokens)}
        counters.drafts = max(0.0, counters.drafts - placeholder_steps)
        counters.draft_tokens = max(0.0, counters.draft_tokens - placeholder_steps * draft_length)
    if None not in (counters.drafts, counters.draft_tokens, counters.accepted_tokens):
        positions = counters.accepted_per_position
        summary = acceptance_from_counters(int(counters.drafts), int(counters.draft_tokens),
                                           int(counters.accepted_tokens),
                                           [int(p) for p in positions] if positions else None,
                                           draft_length=draft_length)
        result.update(summary.to_dict())
        result.update(step_kind="drafted", acceptance_length_drafted=summary.acceptance_length,
                      num_drafted_steps=int(counters.drafts))
        result["al_definition"] = "1 + accepted / drafted steps (counter drafts = steps that carried a draft)"
        if uncorrected is not None:
            steps = uncorrected["num_drafted_steps"]
            uncorrected["acceptance_length"] = float(acceptance_length_from_counts(steps, int(counters.accepted_tokens)))
            result.update(num_prefix_cache_placeholder_steps=int(placeholder_steps), uncorrected=uncorrected)
    elif counters.verify_steps is not None and counters.generation_tokens is not None:
        result.update(_verify_step_figures(counters, num_requests))
    elif counters.draft_tokens is not None and counters.accepted_tokens is not None:
        result["mean_acceptance_rate"] = (counters.accepted_tokens / counters.draft_tokens
                                          if counters.draft_tokens else None)
        result["num_draft_tokens"] = int(counters.draft_tokens)
        result["num_accepted_tokens"] = int(counters.accepted_tokens)
    if counters.generation_tokens is not None and counters.accepted_tokens is not None:
        result.update(_token_step_figures(counters, num_requests, result.get("num_decode_steps") is not None))
    return result


def _verify_step_figures(counters: CounterAcceptance, num_requests: int) -> dict[str, Any]:
    """SGLang: every decode step verifies; generation tokens = one prefill token per request
    + decode steps + accepted drafts."""
    steps = int(counters.verify_steps)
    accepted = max(0, int(counters.generation_tokens) - steps - num_requests)
    al = float(acceptance_length_from_counts(steps, accepted))
    # Derived from emitted tokens, these accepted drafts exclude any accepted past max_tokens.
    return dict(acceptance_length=al, acceptance_length_drafted=al, num_steps=steps,
                num_drafted_steps=steps, num_decode_steps=steps, num_accepted_tokens=accepted,
                tokens_per_decode_step=al if steps else None, step_kind="drafted",
                accepted_excludes_past_max_tokens=True,
                al_definition="1 + (generation tokens - verify steps - requests) / verify steps")


def _token_step_figures(counters: CounterAcceptance, num_requests: int, have_decode_steps: bool) -> dict[str, Any]:
    """Forward passes that produced tokens (prefill included): tokens - accepted drafts; less one
    prefill per request, the decode steps (short by the drafts accepted past max_tokens, which the
    counters count but never emitted), unless another source already gave them."""
    figures: dict[str, Any] = {"num_token_steps": int(counters.generation_tokens - counters.accepted_tokens)}
    # Drafted steps are decode steps too (exact with draft-model speculation, every step drafting).
    decode = max(figures["num_token_steps"] - num_requests, int(counters.drafts or 0))
    decode_tokens = int(counters.generation_tokens) - num_requests
    if decode > 0 and not have_decode_steps:
        figures.update(num_decode_steps=decode, num_decode_tokens=decode_tokens,
                       tokens_per_decode_step=decode_tokens / decode,
                       decode_steps_note="max(drafted steps, generation tokens - accepted drafts - "
                                         "requests): a lower bound when drafts were accepted past "
                                         "max_tokens under partial drafting")
    return figures


def _relative(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return abs(a - b) / abs(b)


def _cut_slack(records, draft_length: int | None) -> int:
    capped = sum(1 for r in records if str(r.finish_reason or "").lower() in MAX_TOKENS_REASONS)
    return capped * int(draft_length or 0)


def _chunk_steps(summary) -> int | None:
    """Decode steps the chunks show at least: valid steps + one per merged chunk."""
    if summary is None or summary.num_decode_steps is None:
        return None
    return summary.num_decode_steps + int((summary.trim_report or {}).get("num_merged_chunks", 0))


def compare_sources(acc: RecordAcceptance, counters: dict | None, records, tolerance: float) -> tuple[dict, list[str]]:
    """``(agreement, flags)``: relative differences of like quantities, and what exceeds ``tolerance``."""
    engine, cov = acc.engine, acc.engine_coverage
    agreement: dict[str, Any] = {"reference": acc.primary_name, "tolerance": tolerance, "relative_difference": {},
                                 "compared": []}
    flags: list[str] = []

    def check(name: str, value, expected, what: str, allowed: float = 0.0) -> None:
        if value is None or expected is None:
            return
        difference = _relative(float(value), float(expected))
        agreement["relative_difference"][name] = difference
        agreement["compared"].append(name)
        if difference is not None and abs(float(value) - float(expected)) > allowed and difference > tolerance:
            flags.append(f"disagreement: {what} ({value}) differs from {expected} by {100 * difference:.1f}% "
                         f"(> {100 * tolerance:.1f}%)")

    if counters is not None and counters.get("complete") and engine is not None and cov.complete:
        emitted_only = counters.get("accepted_excludes_past_max_tokens")
        check("counters_num_accepted_tokens", counters.get("num_accepted_tokens"),
              cov.num_accepted_tokens - (cov.num_accepted_past_max_tokens if emitted_only else 0),
              "accepted tokens from counters vs the engine's per-request sum"
              + (" (emitted only)" if emitted_only else ""))
        check("counters_num_draft_tokens", counters.get("num_draft_tokens"), cov.num_draft_tokens,
              "drafted tokens from counters vs the engine's per-request sum")
        check("counters_num_drafted_steps", counters.get("num_drafted_steps"), cov.num_drafted_steps,
              "drafted steps from counters vs the engine's per-request sum")
    chunk_steps = _chunk_steps(acc.chunks_untrimmed)
    if engine is not None and chunk_steps is not None and acc.chunks_are_steps:
        slack = _cut_slack(records, acc.draft_length)
        agreement["relative_difference"]["chunks_decode_steps"] = _relative(chunk_steps, cov.num_decode_steps)
        agreement["compared"].append("chunks_decode_steps")
        if chunk_steps > cov.num_decode_steps + slack:
            check("chunks_decode_steps", chunk_steps, cov.num_decode_steps,
                  "decode steps seen in chunks vs the engine's decode steps", allowed=slack)
        elif chunk_steps < cov.num_decode_steps:
            flags.append(f"merged_steps: the chunks hold {cov.num_decode_steps - chunk_steps} fewer decode steps "
                         f"than the engine counted ({chunk_steps} < {cov.num_decode_steps}): steps merged into "
                         "chunks; the engine's per-request statistics are primary")
    elif engine is None and counters is not None and counters.get("complete") and acc.chunks_untrimmed is not None \
            and not (acc.chunks_untrimmed.trim_report or {}).get("num_merged_chunks"):
        check("counters_vs_chunks_num_accepted_tokens", counters.get("num_accepted_tokens"),
              acc.chunks_untrimmed.num_accepted_tokens, "accepted tokens from counters vs chunks",
              allowed=_cut_slack(records, acc.draft_length))
    return agreement, flags


# Failures after which the server may still have generated the whole response (not an HTTP refusal,
# not a turn that never ran).
_LOST_STREAM_KINDS = frozenset({"connection", "timeout", "malformed", "cancelled"})


def explain_lost_streams(flags: list[str], failed) -> list[str]:
    """Counter disagreements explained by requests the client lost: the server counted every token it
    generated, the records hold only the successful requests'. Each ``disagreement`` flag that
    compares counters gets how many requests failed mid-stream (at least one token received) and
    before their first token, and says so; other flags are returned as they are."""
    lost = [r for r in failed if r.error_kind in _LOST_STREAM_KINDS]
    if not lost:
        return flags
    mid = [r for r in lost if r.chunk_tokens]
    received = sum(sum(r.chunk_tokens) for r in mid)
    note = (f"; {len(mid)} request(s) failed mid-stream after {received} token(s) had arrived and "
            f"{len(lost) - len(mid)} failed before their first token: the counters include the tokens the server "
            "generated for them, which the client never received (they are not in the per-request sums)")
    return [flag + note if flag.startswith("disagreement:") and "from counters" in flag else flag for flag in flags]


__all__ = ["compare_sources", "counter_summary", "explain_lost_streams"]
