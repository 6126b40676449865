"""TensorRT-LLM's ``trtllm-serve``: ``/v1/completions`` with a token-id prompt.

Its request models forbid unknown fields, so the payload holds only fields the server knows
(no ``return_token_ids``, no ``cache_prompt``). With ``continuous_usage_stats`` every chunk
carries cumulative ``usage.completion_tokens``. Each streamed choice carries
``avg_decoded_tokens_per_iter``, the request's decoded tokens per iteration: a rounded proxy of
the acceptance length (``exact`` False in the statistics). Prometheus lives at
``/prometheus/metrics``; the optional per-request ``/perf_metrics`` is not matched to requests.
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import CounterAcceptance, EngineAdapter, StreamState, get_json
from speedbench.client.engines.openai import completion_payload, parse_openai_completion_event
from speedbench.records import EngineSpecStats

# Fields trtllm-serve's CompletionRequest accepts that we may send.
ALLOWED_FIELDS = frozenset({"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stream",
                            "stream_options", "ignore_eos", "top_k", "stop", "min_tokens"})


class TrtLlmAdapter(EngineAdapter):
    name = "trtllm"
    metrics_path = "/prometheus/metrics"

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        unknown = set(self.extra_body) - ALLOWED_FIELDS
        if unknown:
            raise ValueError(f"trtllm rejects unknown request fields: {', '.join(sorted(unknown))}")
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

    async def describe_server(self, session) -> dict[str, Any]:
        info = await super().describe_server(session)
        version = await get_json(session, self.url + "/version")
        if version and version.get("version"):
            info["engine_version"] = f"tensorrt_llm {version['version']}"
        return info

    def counter_acceptance(self, delta: dict[str, float], per_position: dict[int, float]) -> CounterAcceptance | None:
        if "trtllm_spec_decode_num_draft_tokens_total" not in delta:
            return None
        return CounterAcceptance(
            source="trtllm.prometheus",
            draft_tokens=delta.get("trtllm_spec_decode_num_draft_tokens_total"),
            accepted_tokens=delta.get("trtllm_spec_decode_num_accepted_tokens_total"),
        )
