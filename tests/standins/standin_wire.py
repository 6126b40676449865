"""The stand-ins' wire formats: streamed events, final statistics, errors and Prometheus text.

Shapes follow the engines as recorded (``../shared/wire/vllm-0.32.0-cpu/``) or read in their
source (``docs/engine-wire-formats.md``):

- vLLM: ``prompt_token_ids`` on the first chunk and ``null`` on every later one; the usage chunk
  (``choices: []``) carries ``system_fingerprint`` and, with ``--per-request-spec-decode-metrics``,
  ``metrics.speculative_decoding`` over *drafted* steps; errors are
  ``{"error": {"message", "type", "param", "code"}}``; every counter has a ``*_created`` gauge
  beside it (same labels, ``position`` included);
- SGLang: cumulative text, ``output_ids`` and ``meta_info.completion_tokens`` on ``/generate``, the
  spec_* fields in the last event only and none without speculation; the histogram grows only to
  the largest count accepted; older releases' count names on request; on ``/v1/completions`` text
  deltas, and the statistics only when asked (``return_spec_tokens_details``), as
  ``sglext.spec_tokens_details`` in a chunk with empty ``choices`` before the usage chunk;
- TensorRT-LLM: ``avg_decoded_tokens_per_iter`` per choice; validation errors as
  ``{"error": "<message>"}``; ``/perf_metrics`` entries with ``request_id``.
"""
from __future__ import annotations

import time
from typing import Any

from tests.standins.standin_sim import Counters, Simulation, StepPlan

# Fields trtllm-serve's CompletionRequest declares (tensorrt_llm/serve/openai_protocol.py, 1.2);
# kept apart from the client adapter's list on purpose, so a test can catch either being wrong.
TRTLLM_FIELDS = frozenset({
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
    "lora_request", "prompt_ignore_length", "use_beam_search", "top_k", "top_p_min", "min_p",
    "repetition_penalty", "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output",
    "ignore_eos", "min_tokens", "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens",
    "return_context_logits", "detokenize", "thinking_token_budget", "add_special_tokens", "response_format",
    "disaggregated_params", "priority", "conversation_params"})
TRTLLM_STREAM_OPTIONS = frozenset({"include_usage", "continuous_usage_stats"})


def error_body(engine: str, status: int, message: str) -> dict[str, Any]:
    if engine == "trtllm":
        return {"error": message}
    kind = {400: "BadRequestError", 429: "TooManyRequestsError", 500: "InternalServerError"}.get(status, "Error")
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def histogram(accepted: list[int], width: int) -> list[int]:
    out = [0] * width
    for a in accepted:
        out[a] += 1
    return out


def vllm_spec(plan: StepPlan, k: int) -> dict[str, Any]:
    accepted = plan.accepted
    n, total = len(accepted), sum(accepted)
    return {"mean_acceptance_length": 1 + total / n if n else 1.0,
            "draft_acceptance_rate": total / (n * k) if n else 0.0,
            "acceptance_histogram": histogram(accepted, k + 1), "num_spec_steps": n,
            "num_accepted_draft_tokens": total, "num_draft_tokens": n * k, "num_spec_tokens": k}


def _sglang_spec(sim: Simulation, plan: StepPlan, emitted: int) -> dict[str, Any]:
    """A request's spec_* statistics under 0.5.23's names."""
    accepted = plan.accepted_all
    # A tree proposes its nodes per verify: the rate is per node (0.509 in the capture, where the
    # same run as a chain of 3 had 0.848).
    verify, correct, proposed = len(accepted), sum(accepted), len(accepted) * sim.proposed_per_step
    return {"spec_accept_rate": correct / proposed if proposed else 0.0,
            # SGLang's own length counts the prefill's token: completion tokens / verify calls
            "spec_accept_length": emitted / verify if verify else 1.0,
            "spec_num_correct_drafts": correct, "spec_num_proposed_drafts": proposed, "spec_verify_ct": verify,
            # grows only as far as the largest count accepted, like Req's histogram
            "spec_correct_drafts_histogram": histogram(accepted, max(accepted) + 1) if accepted else []}


def sglang_meta(sim: Simulation, plan: StepPlan, emitted: int) -> dict[str, Any]:
    """The spec_* fields of the last ``/generate`` event's meta_info (none without speculation)."""
    if not sim.draft_length:
        return {}
    meta = _sglang_spec(sim, plan, emitted)
    if sim.sglang_legacy_names:
        meta["spec_accept_token_num"] = meta.pop("spec_num_correct_drafts")
        meta["spec_draft_token_num"] = meta.pop("spec_num_proposed_drafts")
    return meta


def sglang_spec_tokens_details(sim: Simulation, plan: StepPlan, emitted: int) -> dict[str, Any] | None:
    """``sglext.spec_tokens_details`` (0.5.23): the same counts plus the DSpark cap fields (0 and
    empty without it); None without speculation (then no sglext chunk is sent)."""
    if not sim.draft_length:
        return None
    spec = _sglang_spec(sim, plan, emitted)
    return {"spec_accept_rate": spec["spec_accept_rate"], "spec_accept_length": spec["spec_accept_length"],
            "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
            **{k: spec[k] for k in ("spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct",
                                    "spec_correct_drafts_histogram")},
            "spec_cap_lens_histogram": []}


def sglang_usage(prompt_tokens: int, completion_tokens: int, final: bool) -> dict[str, Any]:
    """SGLang's usage: a per-chunk one (continuous_usage_stats) keeps its null fields, the final
    usage chunk is written without them."""
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
                             "completion_tokens": completion_tokens}
    if not final:
        usage["prompt_tokens_details"] = None
    usage["reasoning_tokens"] = 0
    if not final:
        usage["completion_tokens_details"] = None
    return usage


def sglang_completion_chunk(response_id: str, created: int, model: str, choices: list[dict[str, Any]],
                            usage: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    """One ``/v1/completions`` chunk as SGLang writes it (``usage`` null unless continuous)."""
    return {"id": response_id, "object": "text_completion", "created": created, "model": model,
            "choices": choices, "usage": usage, **extra}


def sglang_completion_choice(delta: str, token_ids: list[int] | None, finish: str | None) -> dict[str, Any]:
    """A streamed choice: text delta, ``token_ids`` only when asked, ``matched_stop`` (the EOS id 2
    when it stopped there, else null)."""
    choice: dict[str, Any] = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish,
                              "matched_stop": 2 if finish == "stop" else None}
    if token_ids is not None:
        choice["token_ids"] = token_ids
    return choice


def sglang_completion_options(body: dict[str, Any]) -> dict[str, bool]:
    """What a ``/v1/completions`` request asked SGLang for (``serving_completions.py``)."""
    stream_options = body.get("stream_options") or {}
    return {"token_ids": bool(body.get("return_token_ids")),
            "spec_details": bool(body.get("return_spec_tokens_details")),
            "include_usage": bool(stream_options.get("include_usage")),
            "continuous_usage": bool(stream_options.get("continuous_usage_stats"))}


def sglang_completion_tail(sim: Simulation, plan: StepPlan, response_id: str, prompt_tokens: int, emitted: int,
                           options: dict[str, bool]) -> list[dict[str, Any]]:
    """The chunks after the last token: the sglext chunk (asked for, and speculating), then the
    usage chunk (asked for), written without its null fields."""
    created, chunks = int(time.time()), []
    details = sglang_spec_tokens_details(sim, plan, emitted) if options["spec_details"] else None
    if details is not None:
        chunks.append(sglang_completion_chunk(response_id, created, sim.model, [], None,
                                              sglext={"spec_tokens_details": details}))
    if options["include_usage"]:
        chunks.append({"id": response_id, "object": "text_completion", "created": created, "model": sim.model,
                       "choices": [], "usage": sglang_usage(prompt_tokens, emitted, final=True)})
    return chunks


def trtllm_perf_entry(request_id: int, plan: StepPlan, k: int) -> dict[str, Any]:
    accepted = plan.accepted
    spec = {"acceptance_rate": sum(accepted) / (len(accepted) * k) if accepted and k else 0.0,
            "total_accepted_draft_tokens": sum(accepted), "total_draft_tokens": len(accepted) * k}
    metrics: dict[str, Any] = {"first_iter": 0, "last_iter": len(plan.sizes) - 1,
                               "timing_metrics": {}, "kv_cache_metrics": {}}
    if spec["total_draft_tokens"] > 0:
        metrics["speculative_decoding"] = spec
    return {"request_id": request_id, "perf_metrics": metrics}


def _family(lines: list[str], name: str, kind: str, help_text: str, samples: list[tuple[str, float]],
            created: float) -> None:
    """A counter (``name`` without ``_total``) and its ``*_created`` gauge, as vLLM exposes them."""
    lines += [f"# HELP {name}_total {help_text}", f"# TYPE {name}_total {kind}"]
    lines += [f"{name}_total{{{labels}}} {float(value)}" for labels, value in samples]
    lines += [f"# HELP {name}_created {help_text}", f"# TYPE {name}_created gauge"]
    lines += [f"{name}_created{{{labels}}} {created}" for labels, _ in samples]


def vllm_metrics(sim: Simulation, c: Counters, created: float) -> list[str]:
    label = f'engine="0",model_name="{sim.model}"'
    lines: list[str] = []
    if c.k:
        _family(lines, "vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.",
                [(label, c.drafts)], created)
        _family(lines, "vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.",
                [(label, c.draft_tokens)], created)
        _family(lines, "vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.",
                [(label, c.accepted)], created)
        _family(lines, "vllm:spec_decode_num_accepted_tokens_per_pos", "counter",
                "Accepted tokens per draft position.",
                [(f'{label},position="{i}"', v) for i, v in enumerate(c.per_position)], created)
    _family(lines, "vllm:generation_tokens", "counter", "Number of generation tokens processed.",
            [(label, c.generation_tokens)], created)
    _family(lines, "vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
            [(label, c.prompt_tokens)], created)
    _family(lines, "vllm:request_success", "counter", "Count of successfully processed requests.",
            [(f'engine="0",finished_reason="length",model_name="{sim.model}"', c.requests)], created)
    return lines


def sglang_metrics(sim: Simulation, c: Counters) -> list[str]:
    """As SGLang 0.5.23 with ``--enable-metrics`` (../shared/wire/sglang-0.5.23-cpu/): token counters
    split by ``is_streaming`` (the stand-in only streams), the verify-call counter, and spec_*
    gauges that hold the last decode-log window's values (0 until the first refresh)."""
    model = f'engine_type="unified",model_name="{sim.model}"'
    streamed = f'{model},is_streaming="true"'
    gauge_labels = f'{model},moe_ep_rank="0",pp_rank="0",tp_rank="0"'
    refreshed = bool(c.gauges)
    gauges = {"spec_accept_length": c.gauges.get("spec_accept_length", 0.0),
              "spec_accept_rate": c.gauges.get("spec_accept_rate", 0.0),
              "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
              "spec_num_steps": float(sim.draft_length if refreshed and sim.sglang_topk > 1 else 0),
              "spec_num_draft_tokens": float(sim.proposed_per_step + 1 if refreshed else 0)}
    lines = []
    for name, value in gauges.items():
        lines += [f"# TYPE sglang:{name} gauge", f"sglang:{name}{{{gauge_labels}}} {value}"]
    lines += ["# TYPE sglang:prompt_tokens_total counter",
              f"sglang:prompt_tokens_total{{{streamed}}} {float(c.prompt_tokens)}",
              "# TYPE sglang:generation_tokens_total counter",
              f"sglang:generation_tokens_total{{{streamed}}} {float(c.generation_tokens)}"]
    if sim.draft_length:  # a server without speculation has the gauges (at 0) but not this counter
        lines += ["# TYPE sglang:spec_verify_calls_total counter",
                  f"sglang:spec_verify_calls_total{{{model}}} {float(c.verify_calls)}"]
    return lines + ["# TYPE sglang:num_requests_total counter",
                    f"sglang:num_requests_total{{{streamed}}} {float(c.requests)}"]


def trtllm_metrics(sim: Simulation, c: Counters) -> list[str]:
    label = f'model_name="{sim.model}"'
    lines = [f'trtllm_request_success_total{{{label}}} {float(c.requests)}']
    if sim.enable_iter_perf_stats:
        al = 1 + c.accepted / c.drafts if c.drafts else 0.0
        lines += ["# TYPE trtllm_spec_decode_num_draft_tokens_total counter",
                  f"trtllm_spec_decode_num_draft_tokens_total{{{label}}} {float(c.draft_tokens)}",
                  f"trtllm_spec_decode_num_accepted_tokens_total{{{label}}} {float(c.accepted)}",
                  f"trtllm_spec_decode_acceptance_length{{{label}}} {al}"]
    return lines
