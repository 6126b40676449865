"""TensorRT-LLM's ``trtllm-serve``: ``/v1/completions`` with a token-id prompt.

Its request models forbid unknown fields, so the payload holds only fields the server knows
(no ``return_token_ids``, no ``cache_prompt``). With ``continuous_usage_stats`` every chunk
carries cumulative ``usage.completion_tokens``. Each streamed choice carries
``avg_decoded_tokens_per_iter``, the request's decoded tokens per iteration: a rounded proxy of
the acceptance length (``exact`` False in the statistics). Prometheus lives at
``/prometheus/metrics``, which exists only when the server runs with ``return_perf_metrics``, and
its speculative counters only with ``enable_iter_perf_stats``. ``GET /perf_metrics`` (with
``return_perf_metrics`` and ``perf_metrics_max_requests``) returns, and empties, the finished
requests' entries: ``request_id`` (the stream's id is ``cmpl-<request_id>``) and
``perf_metrics.speculative_decoding{total_draft_tokens, total_accepted_draft_tokens}``, an exact
per-request source (:func:`stats_from_perf_metrics`, joined to records by the runner).
Output ids: ``return_token_ids`` is refused, but the streamed choice model of recent releases
declares ``token_ids`` (``tensorrt_llm/serve/openai_protocol.py``); where a server fills it, the
shared parser keeps the ids, otherwise the client re-encodes the text.
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import EngineAdapter, StreamState
from speedbench.client.engines.openai import completion_payload, parse_openai_completion_event
from speedbench.metrics.acceptance.steps import derive_decode_steps
from speedbench.records import EngineSpecStats

# Fields trtllm-serve's CompletionRequest declares (tensorrt_llm/serve/openai_protocol.py, 1.2);
# its models forbid anything else (extra="forbid"), so --extra-body is checked against this set.
ALLOWED_FIELDS = frozenset({
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
    "lora_request", "prompt_ignore_length", "use_beam_search", "top_k", "top_p_min", "min_p",
    "repetition_penalty", "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output",
    "ignore_eos", "min_tokens", "skip_special_tokens", "spaces_between_special_tokens",
    "truncate_prompt_tokens", "return_context_logits", "detokenize", "thinking_token_budget",
    "add_special_tokens", "response_format", "disaggregated_params", "priority", "conversation_params"})
STREAM_OPTIONS = frozenset({"include_usage", "continuous_usage_stats"})
PERF_METRICS_PATH = "/perf_metrics"


class TrtLlmAdapter(EngineAdapter):
    name = "trtllm"
    version_route, version_label = "/version", "tensorrt_llm"
    metrics_path = "/prometheus/metrics"
    perf_metrics_path = PERF_METRICS_PATH

    def check_options(self) -> None:
        """Refuse, before any request, fields trtllm-serve would reject with HTTP 400."""
        unknown = sorted(set(self.extra_body) - ALLOWED_FIELDS)
        unknown += [f"stream_options.{k}" for k in sorted(set(self.extra_body.get("stream_options") or {})
                                                            - STREAM_OPTIONS)]
        if unknown:
            raise ValueError(f"trtllm rejects unknown request fields: {', '.join(unknown)}")

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        self.check_options()
        return completion_payload(
            self, prompt_ids, model=self.model or "", ignore_eos=self.sampling.ignore_eos,
            stream_options={"include_usage": True, "continuous_usage_stats": True})

    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        new = parse_openai_completion_event(event, state, self.name)
        choices = event.get("choices") or []
        if choices and choices[0].get("avg_decoded_tokens_per_iter") is not None:
            state.extra["avg_decoded_tokens_per_iter"] = float(choices[0]["avg_decoded_tokens_per_iter"])
        return new, None

    def engine_stats(self, state: StreamState) -> EngineSpecStats | None:
        average = state.extra.get("avg_decoded_tokens_per_iter")
        if not average:
            return None
        tokens = int((state.usage or {}).get("completion_tokens", state.tokens_total))
        # The average includes the prefill iteration: iterations = tokens / average.
        iterations = max(1, round(tokens / average))
        return EngineSpecStats(source="trtllm.avg_decoded_tokens_per_iter", verify_steps=max(0, iterations - 1),
                               accepted_tokens=max(0, tokens - iterations), exact=False,
                               raw={"avg_decoded_tokens_per_iter": average, "completion_tokens": tokens})

    def request_stats_by_id(self, entries: Any) -> dict[str, dict[str, Any]]:
        return perf_metrics_by_response_id(entries)

    def stats_from_request_entry(self, entry: dict[str, Any], output_tokens: int, draft_length: int | None,
                                 chunk_steps: int = 0) -> EngineSpecStats | None:
        return stats_from_perf_metrics(entry, output_tokens, draft_length, chunk_steps)


def perf_metrics_by_response_id(entries: Any) -> dict[str, dict[str, Any]]:
    """``/perf_metrics`` entries keyed by the stream id they belong to (``cmpl-<request_id>``)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("request_id") is not None:
            out[f"cmpl-{entry['request_id']}"] = entry
    return out


def stats_from_perf_metrics(entry: dict[str, Any], output_tokens: int, draft_length: int | None,
                            chunk_steps: int = 0) -> EngineSpecStats | None:
    """Exact per-request statistics from one ``/perf_metrics`` entry (None without speculation).

    Drafted steps are ``total_draft_tokens / K`` when K is known (every TensorRT-LLM drafted step
    proposes K tokens); decode steps follow from the output length (``speedbench.metrics.acceptance.steps``).
    """
    spec = ((entry.get("perf_metrics") or {}).get("speculative_decoding")) or {}
    drafted, accepted = spec.get("total_draft_tokens"), spec.get("total_accepted_draft_tokens")
    if drafted is None or accepted is None:
        return None
    drafted_steps = int(drafted) // draft_length if draft_length and int(drafted) % draft_length == 0 else None
    decode, past = derive_decode_steps(output_tokens, int(accepted), drafted_steps, chunk_steps)
    return EngineSpecStats(source="trtllm.perf_metrics", verify_steps=drafted_steps, draft_tokens=int(drafted),
                           accepted_tokens=int(accepted), draft_length=draft_length,
                           raw={"request_id": entry.get("request_id"), **spec}, decode_steps=decode,
                           drafted_steps=drafted_steps, accepted_past_max_tokens=past)
