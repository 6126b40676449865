"""SGLang's ``bench_serving`` (SGLang 0.5.23): its figures, from our records, and its saved result file.

Definitions, read in ``sglang/benchmark/serving.py`` (``benchmark``, ``calculate_metrics``,
``async_request_sglang_generate``), ``sglang/benchmark/datasets/speed_bench.py`` and the scheduler's
``internal_state.py`` / ``metrics_reporter.py`` of SGLang 0.5.23 (``python -m sglang.bench_serving`` is
a deprecated alias of ``sglang.benchmark.serving``):

- ``accept_length`` is read once, after the run, from ``GET /server_info``:
  ``internal_states[0].avg_spec_accept_length`` (data-parallel rank 0 only; the first decode
  server in a disaggregated deployment). The scheduler computes it as ``spec_total_num_accept_tokens
  / spec_total_num_forward_ct``: tokens emitted per request-step (accepted drafts + 1) over
  request-steps, **accumulated since the server started** (or the last ``/flush_cache``) and only
  folded in when a decode log line is written (every ``--decode-log-interval`` = 40 decode
  iterations by default). It is not differenced over the run: earlier traffic (warmup, previous
  runs) is in it and the last < 40 iterations are not. On a fresh server that served only these
  requests and logged after the last step, it equals ``1 + sum accepted / sum verify steps``,
  which is what the peer view computes.
- Per request (native ``/generate`` backend): ``ttft`` = first event with text - send;
  ``latency`` = end of stream - send; ``output_len`` = ``meta_info.completion_tokens``; ``itl``:
  each event's gap divided evenly over the tokens it brought, one entry per token (a per-token
  inter-token latency, our TPOT per token); ``tpot = (latency - ttft) / (output_len - 1)``.
  ``output_throughput = sum output_len / duration``; latencies as mean, median, std, p90, p95 and
  p99 in ms.
- The ``speed-bench`` dataset reads one JSONL file with ``turns`` (a list of strings), keeps
  ``turns[0]`` only, filters by ``category`` (``--speed-bench-category``), applies the chat
  template and sends the decoded text; requests are drawn with ``random.sample``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speedbench.peers.common import TIMING, Figure, PeerView, Request, own_engine, run_figures

TOOL = "sglang bench_serving"
VERSION = "SGLang 0.5.23"
SOURCE = "sglang/benchmark/serving.py, sglang/benchmark/datasets/speed_bench.py, " \
         "sglang/srt/managers/scheduler_components/internal_state.py"
NAME = "sglang"
LATENCY_STATS = ("mean", "median", "std", "p90", "p95", "p99")

FIGURES: tuple[Figure, ...] = (
    Figure("accept_length", "server's running mean of (accepted + 1) per request-step since start, "
           "read from /server_info after the run", "acceptance_length_drafted",
           differs="cumulative since the server started (or /flush_cache), not differenced over the run; "
                   "updated only every decode-log-interval (40) iterations; DP rank 0 only"),
    Figure("completed", "successful requests", "num_requests", same=True),
    Figure("total_output_tokens", "sum of meta_info.completion_tokens", "total_output_tokens", same=True),
    Figure("output_throughput", "sum output tokens / duration", "output_tps", kind=TIMING,
           differs="our run span starts at the first scheduled send"),
    Figure("mean_ttft_ms", "first text event - send, mean", "ttft_mean", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time"),
    Figure("median_ttft_ms", "first text event - send, median", "ttft_p50", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time"),
    Figure("mean_itl_ms", "event gap / tokens in the event, one entry per token, mean", "tpot_mean", same=True,
           kind=TIMING, scale=1000.0),
    Figure("mean_tpot_ms", "(latency - ttft) / (tokens - 1) per request, mean", "tpot_request_mean",
           kind=TIMING, scale=1000.0, differs="ours divides by the tokens after the first chunk"),
    Figure("mean_e2e_latency_ms", "end of stream - send, mean", "e2e_mean", kind=TIMING, scale=1000.0,
           differs="ours starts at the scheduled send time"),
)


def server_accept_length(accepted_tokens: int, verify_steps: int) -> float | None:
    """``(sum accepted + sum steps) / sum steps`` over request-steps: SGLang's ``avg_spec_accept_length``
    on a server whose only traffic was these requests (None without a step)."""
    return (accepted_tokens + verify_steps) / verify_steps if verify_steps > 0 else None


def request_figures(requests: list[Request]) -> dict[str, Any]:
    """bench_serving's per-request and throughput figures for successful request-turns."""
    done = [r for r in requests if r.chunk_s]
    if not done:
        return {"completed": 0}
    ttft = [r.ttft_s for r in done]
    latency = [r.latency_s for r in done]
    tpot = [(lat - t) / (r.output_tokens - 1) for r, lat, t in zip(done, latency, ttft) if r.output_tokens > 1]
    itl = [(b - a) / n for r in done for a, b, n in zip(r.chunk_s, r.chunk_s[1:], r.chunk_tokens[1:])
           for _ in range(n) if n > 0]
    return run_figures(done, [r.end_s for r in done],
                       {"ttft": ttft, "tpot": tpot, "itl": itl, "e2e_latency": latency}, LATENCY_STATS)


def view(requests: list[Request], engine: str) -> PeerView:
    """What ``bench_serving`` would print for these request-turns (first turns only, as it sends)."""
    first = [r for r in requests if r.turn_index == 0]
    notes = []
    if len(first) < len(requests):
        notes.append(f"bench_serving's speed-bench dataset sends only turns[0]: {len(requests) - len(first)} later "
                     "turn(s) left out; the first turns' timings were taken while those later turns shared the "
                     "server")
    figures = request_figures(first)
    if not own_engine(engine, NAME):
        notes.append(f"accept_length is read from SGLang's /server_info: none for engine {engine!r}")
    elif all(r.accepted is not None and r.drafted_steps is not None for r in first) and first:
        figures["accept_length"] = server_accept_length(sum(r.accepted for r in first),
                                                        sum(r.drafted_steps for r in first))
        notes.append("accept_length as on a fresh server that served only these requests; the real figure "
                     "also holds everything the server ran before and lags by up to 40 decode iterations")
    return PeerView(TOOL, VERSION, SOURCE, "per-request engine statistics" if "accept_length" in figures
                    else "requests", figures, notes=notes)


def read_result(path: str | Path) -> dict[str, Any]:
    """The last line of a ``bench_serving --output-file`` JSONL file (each run appends one line)."""
    path = Path(path)
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        data = json.loads(lines[-1]) if lines else None
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a bench_serving result ({error})") from error
    if not is_result(data):
        raise ValueError(f"{path}: not a bench_serving result (no 'accept_length' / 'output_throughput')")
    keys = {f.key for f in FIGURES} | {"duration", "request_throughput", "median_tpot_ms", "median_itl_ms",
                                       "p99_itl_ms", "p99_ttft_ms"}
    meta = {k: data.get(k) for k in ("backend", "dataset_name", "max_concurrency", "request_rate")}
    return {"tool": NAME, "figures": {k: data[k] for k in keys if k in data}, "meta": meta, "per_category": {},
            "lines": len(lines)}


def is_result(data: Any) -> bool:
    return isinstance(data, dict) and "accept_length" in data and "output_throughput" in data


__all__ = ["FIGURES", "NAME", "SOURCE", "TOOL", "VERSION", "is_result", "read_result", "request_figures",
           "server_accept_length", "view"]
