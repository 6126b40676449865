"""vLLM's ``vllm bench serve`` (vLLM 0.32.0): its figures, from our records, and its saved result file.

Definitions, read in ``vllm/benchmarks/serve.py`` (``fetch_spec_decode_metrics``, the spec-decode
block of ``benchmark``, ``calculate_metrics``), ``vllm/benchmarks/lib/endpoint_request_func.py``
and ``vllm/benchmarks/datasets/datasets.py`` (``SpeedBench``) of vLLM 0.32.0:

- Speculative figures come from the server's Prometheus counters, read just before the measured
  requests and just after the last one: ``D`` = Δ``vllm:spec_decode_num_drafts_total`` (drafted
  steps), ``T`` = Δ``..._num_draft_tokens_total``, ``A`` = Δ``..._num_accepted_tokens_total``,
  ``A_i`` = Δ``..._num_accepted_tokens_per_pos_total{position=i}``, every label summed. Then
  ``spec_decode_acceptance_length = 1 + A / D`` (0 when D = 0), ``spec_decode_acceptance_rate =
  100 A / T`` (a percentage), ``spec_decode_per_position_acceptance_rates[i] = A_i / D``: the
  marginal ``P(>= i+1)`` per drafted step, not a conditional rate; when the draft length varies
  from step to step (a ``num_speculative_tokens_per_batch_size`` schedule, n-gram matches) it counts
  every step that drafted fewer than i+1 tokens as a rejection at i+1, and the view sets our rates
  beside it with that cause (:func:`variable_k_comparison`). One figure per run, over all the
  server's traffic in that window (another client's too), drafts accepted past ``max_tokens``
  included. Nothing is printed when T = 0.
- Per request: ``ttft`` = first chunk with ``choices`` - send; ``latency`` = *last* such chunk -
  send (the usage event is not counted); ``itl`` = gaps between consecutive chunks; ``tpot =
  (latency - ttft) / (output_tokens - 1)`` for outputs longer than one token; ``output_tokens`` =
  the usage's ``completion_tokens`` (text re-tokenized only when usage is missing).
  ``output_throughput = sum output_tokens / duration``, ``request_throughput = completed /
  duration``, ``duration`` = first send to last completion. Latencies are reported as mean, median,
  std and p99 in ms (``--percentile-metrics`` defaults to ttft, tpot, itl; e2el only on request).
- The SpeedBench dataset reads ``<dataset-path>/<subset>.jsonl`` with pandas and keeps, of each
  row, ``messages[0]["content"]`` (the first user turn only), filtered by ``category`` with
  ``--speed-bench-category``, shuffled with the seed unless ``--disable-shuffle``; the text is
  rendered with the tokenizer's chat template (``--skip-chat-template`` sends it raw) and sent as
  text.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from speedbench.metrics.acceptance.counter_sources import snapshot_delta
from speedbench.metrics.acceptance.per_step import (
    conditional_from_position_counts,
    draft_length_counts,
    draft_length_histogram,
    marginal_from_position_counts,
    position_counts,
    variable_draft_length,
    vllm_position_rates,
)
from speedbench.peers.common import TIMING, Figure, PeerView, Request, load_json, own_engine, run_figures

TOOL = "vllm bench serve"
VERSION = "vLLM 0.32.0"
SOURCE = "vllm/benchmarks/serve.py, vllm/benchmarks/datasets/datasets.py (SpeedBench)"
NAME = "vllm"

_PREFIX = "vllm:spec_decode_"
LATENCY_STATS = ("mean", "median", "std", "p99")

FIGURES: tuple[Figure, ...] = (
    Figure("spec_decode_acceptance_length", "1 + accepted / drafts, counter deltas over the run",
           "acceptance_length_drafted", same=True,
           differs="one figure per run over every request the server served in the window"),
    Figure("spec_decode_acceptance_rate", "100 * accepted / draft tokens, counter deltas over the run",
           "mean_acceptance_rate", same=True, scale=100.0),
    Figure("spec_decode_per_position_acceptance_rates",
           "accepted at position i / drafts: the marginal P(>= i) per drafted step",
           "marginal_acceptance_rate", same=False,
           differs="a marginal rate over every drafted step, not our conditional AR_i; equal to our marginal when "
                   "every step drafts K, lower when K varies: a step that drafted fewer than i tokens counts as a "
                   "rejection at i (ours counts position i over the steps that drafted it)"),
    Figure("spec_decode_num_drafts", "drafted steps (counter delta)", "num_drafted_steps", same=True),
    Figure("spec_decode_draft_tokens", "draft tokens proposed (counter delta)", "num_draft_tokens", same=True),
    Figure("spec_decode_accepted_tokens", "draft tokens accepted (counter delta)", "num_accepted_tokens", same=True),
    Figure("completed", "successful requests", "num_requests", same=True),
    Figure("total_output_tokens", "sum of usage completion_tokens", "total_output_tokens", same=True),
    Figure("output_throughput", "sum output tokens / (last completion - first send)", "output_tps", kind=TIMING,
           differs="our run span starts at the first scheduled send and ends with the last stream"),
    Figure("request_throughput", "completed / duration", "request_throughput", kind=TIMING,
           differs="our run span starts at the first scheduled send and ends with the last stream"),
    Figure("mean_ttft_ms", "first chunk - send, mean", "ttft_mean", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time, so client queueing counts"),
    Figure("median_ttft_ms", "first chunk - send, median", "ttft_p50", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time"),
    Figure("p99_ttft_ms", "first chunk - send, p99", "ttft_p99", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time"),
    Figure("mean_tpot_ms", "(last chunk - first chunk) / (tokens - 1) per request, mean", "tpot_request_mean",
           kind=TIMING, scale=1000.0, differs="ours divides by the tokens after the first chunk, not tokens - 1"),
    Figure("median_tpot_ms", "(last chunk - first chunk) / (tokens - 1) per request, median", None, kind=TIMING),
    Figure("p99_tpot_ms", "(last chunk - first chunk) / (tokens - 1) per request, p99", None, kind=TIMING),
    Figure("mean_itl_ms", "gaps between chunks, all requests pooled, mean", "step_latency_mean", same=True,
           kind=TIMING, scale=1000.0),
    Figure("median_itl_ms", "gaps between chunks, median", "step_latency_p50", same=True, kind=TIMING, scale=1000.0),
    Figure("p99_itl_ms", "gaps between chunks, p99", "step_latency_p99", same=True, kind=TIMING, scale=1000.0),
)


def spec_decode_figures(num_drafts: int, num_draft_tokens: int, num_accepted: int,
                        accepted_per_position=None) -> dict[str, Any]:
    """vLLM's speculative figures from counter deltas (empty when no draft token was proposed)."""
    if num_draft_tokens <= 0:
        return {}
    per_position = [a / num_drafts for a in (accepted_per_position or [])] if num_drafts > 0 else []
    return {"spec_decode_acceptance_length": 1 + num_accepted / num_drafts if num_drafts > 0 else 0.0,
            "spec_decode_acceptance_rate": num_accepted / num_draft_tokens * 100,
            "spec_decode_num_drafts": int(num_drafts), "spec_decode_draft_tokens": int(num_draft_tokens),
            "spec_decode_accepted_tokens": int(num_accepted),
            "spec_decode_per_position_acceptance_rates": per_position}


def request_figures(requests: list[Request]) -> dict[str, Any]:
    """vLLM's per-request and throughput figures for successful request-turns (see the module doc)."""
    done = [r for r in requests if r.chunk_s]
    if not done:
        return {"completed": 0}
    ttft = [r.ttft_s for r in done]
    latency = [r.chunk_s[-1] - r.send_s for r in done]  # vLLM stops its clock at the last chunk
    tpot = [(lat - t) / (r.output_tokens - 1) for r, lat, t in zip(done, latency, ttft) if r.output_tokens > 1]
    itl = [b - a for r in done for a, b in zip(r.chunk_s, r.chunk_s[1:])]
    return run_figures(done, [r.chunk_s[-1] for r in done], {"ttft": ttft, "tpot": tpot, "itl": itl, "e2el": latency},
                       LATENCY_STATS)


def _engine_sums(requests: list[Request]) -> tuple[int, int, int, list[int]] | None:
    """Drafted steps, draft tokens, accepted tokens and accepted-per-position from per-request statistics."""
    if not requests or any(r.drafted_steps is None or r.draft_tokens is None or r.accepted is None for r in requests):
        return None
    positions: list[int] = []
    if all(r.histogram for r in requests):
        k = max(len(r.histogram) for r in requests) - 1
        positions = [sum(sum(r.histogram[j] for j in range(i + 1, len(r.histogram))) for r in requests)
                     for i in range(k)]
    return (sum(r.drafted_steps for r in requests), sum(r.draft_tokens for r in requests),
            sum(r.accepted for r in requests), positions)


def counter_deltas(entry: dict | None) -> tuple[int, int, int, list[int]] | None:
    """D, T, A and A_i of one load point's ``counters.jsonl`` entry (None without vLLM counters)."""
    if not entry:
        return None
    delta = (entry["delta"], entry.get("delta_per_position") or {}) if "delta" in entry else \
        snapshot_delta(entry.get("before"), entry.get("after"))
    if delta is None or f"{_PREFIX}num_drafts_total" not in delta[0]:
        return None
    totals, per_position = delta
    positions = [int(per_position[k]) for k in sorted(per_position, key=int)]
    return (int(totals[f"{_PREFIX}num_drafts_total"]), int(totals.get(f"{_PREFIX}num_draft_tokens_total", 0)),
            int(totals.get(f"{_PREFIX}num_accepted_tokens_total", 0)), positions)


def _per_step(requests: list[Request]) -> tuple[list[int], list[int]] | None:
    """Every step's drafted and accepted counts (vLLM ``detailed`` per-request metrics), None without them."""
    drafted: list[int] = []
    accepted: list[int] = []
    for r in requests:
        d, a = r.raw.get("per_step_drafted"), r.raw.get("per_step_accepted")
        if not (isinstance(d, list) and isinstance(a, list) and len(d) == len(a)):
            return None
        drafted += d
        accepted += a
    return (drafted, accepted) if drafted else None


def variable_k_comparison(requests: list[Request]) -> tuple[dict[str, Any], list[str]]:
    """vLLM's per-position rates beside ours when K varied from step to step (nothing when it did not),
    and the cause of the difference (:mod:`speedbench.metrics.acceptance.per_step`)."""
    steps = _per_step(requests)
    if steps is None:
        return {}, []
    drafted, accepted = steps
    k = max(drafted)
    lengths = draft_length_counts(drafted, k)
    if k < 1 or not variable_draft_length(lengths):
        return {}, []
    counts = position_counts(drafted, accepted, k)
    short = [int(sum(1 for d in drafted if d < i)) for i in range(1, k + 1)]
    figures = {"vllm_per_position_rates": vllm_position_rates(counts, len(drafted)).tolist(),
               "speedbench_conditional_acceptance_rate": conditional_from_position_counts(counts).tolist(),
               "speedbench_marginal_acceptance_rate": marginal_from_position_counts(counts).tolist(),
               "draft_length_histogram": draft_length_histogram(lengths)}
    note = (f"the draft length varied ({draft_length_histogram(lengths)} steps by drafted count): vLLM divides "
            f"accepted-at-position-i by all {len(drafted)} drafted steps, so the steps that drafted fewer than i "
            f"tokens ({short} for i = 1..{k}) count as rejections at i; speedbench divides by the steps that drafted "
            "position i and accepted every position before it")
    return figures, [note]


def view(requests: list[Request], engine: str, counter_entry: dict | None = None) -> PeerView:
    """What ``vllm bench serve`` would print for these request-turns.

    Its speculative figures need vLLM's counters: the point's counter deltas when the run recorded
    them and every request is a first turn (vLLM sends first turns only, so a multi-turn run's later
    turns are not what it would have measured), else the per-request statistics of the first turns.
    """
    notes = []
    first = [r for r in requests if r.turn_index == 0]
    if len(first) < len(requests):
        notes.append(f"vllm bench serve sends only each row's first turn: {len(requests) - len(first)} later "
                     "turn(s) left out of these figures; the first turns' timings were taken while those later "
                     "turns shared the server")
    figures = request_figures(first)
    basis = "requests"
    if not own_engine(engine, NAME):
        notes.append("vllm bench serve reads only vllm:spec_decode_* counters: no speculative figures for "
                     f"engine {engine!r}")
    else:
        counters = counter_deltas(counter_entry) if len(first) == len(requests) else None
        sums = counters or _engine_sums(first)
        if sums is not None:
            figures.update(spec_decode_figures(*sums))
            basis = "counter deltas of the point" if counters else "per-request engine statistics (first turns)"
        else:
            notes.append("no counters or per-request statistics to compute vLLM's speculative figures from")
        beside, cause = variable_k_comparison(first)
        figures.update(beside)
        notes += cause
    return PeerView(TOOL, VERSION, SOURCE, basis, figures, notes=notes)


def read_result(path: str | Path) -> dict[str, Any]:
    """A ``vllm bench serve --save-result`` JSON file: its figures and what it ran (``meta``)."""
    data = load_json(path, "a vllm bench serve result")
    if not isinstance(data, dict) or "completed" not in data or "duration" not in data:
        raise ValueError(f"{path}: not a vllm bench serve result (no 'completed' / 'duration')")
    keys = {f.key for f in FIGURES} | {"duration", "mean_e2el_ms", "median_e2el_ms", "p99_e2el_ms"}
    meta = {k: data.get(k) for k in ("max_concurrency", "num_prompts", "request_rate", "model_id", "backend",
                                     "date", "label", "tokenizer_id")}
    return {"tool": NAME, "figures": {k: data[k] for k in keys if k in data}, "meta": meta,
            "per_category": {}}


def is_result(data: Any) -> bool:
    return isinstance(data, dict) and "completed" in data and "duration" in data and "backend" in data \
        and "summary" not in data


__all__ = ["FIGURES", "NAME", "SOURCE", "TOOL", "VERSION", "counter_deltas", "is_result", "read_result",
           "request_figures", "spec_decode_figures", "variable_k_comparison", "view"]
