"""vLLM's OpenAI-compatible server (``vllm serve``): ``/v1/completions`` with a token-id prompt.

Request: ``stream_options`` ``include_usage`` + ``continuous_usage_stats`` (every chunk carries
cumulative ``usage.completion_tokens``, exact deltas even when text is empty) and
``return_token_ids`` (each chunk's new token ids). The final usage chunk carries
``metrics.speculative_decoding`` when the server runs with
``--per-request-spec-decode-metrics`` (experimental: absent otherwise, then chunks and
counters remain). Prometheus counters ``vllm:spec_decode_*`` at ``/metrics``.

Observed on a real vLLM 0.32.0 (``docs``/wire captures): ``num_spec_steps`` and
``vllm:spec_decode_num_drafts_total`` count *drafted* steps only (with n-gram speculation some
decode steps carry no draft), drafts accepted on a last step cut by ``max_tokens`` are counted
though not emitted, chunks after the first carry ``"prompt_token_ids": null``, the usage chunk
carries ``system_fingerprint``, and the frontend merges several steps into one chunk at times,
even at concurrency 1, so chunks are a fallback (the results detect and report merged chunks).
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import EngineAdapter, StreamState
from speedbench.client.engines.openai import completion_payload, parse_openai_completion_event
from speedbench.metrics.acceptance.steps import derive_decode_steps
from speedbench.records import EngineSpecStats


class VllmAdapter(EngineAdapter):
    name = "vllm"
    version_route, version_label = "/version", "vllm"

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        return completion_payload(
            self, prompt_ids, model=self.model or "", ignore_eos=self.sampling.ignore_eos,
            stream_options={"include_usage": True, "continuous_usage_stats": True}, return_token_ids=True)

    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        new = parse_openai_completion_event(event, state, self.name)
        extra = state.extra
        metrics = event.get("metrics")
        if metrics:  # the final usage event, with --per-request-spec-decode-metrics
            spec = metrics.get("speculative_decoding")
            if spec:
                extra["spec"] = spec
        choices = event["choices"]
        if choices:
            prompt_ids = choices[0].get("prompt_token_ids")  # the first event only (null afterwards)
            if prompt_ids is not None:
                extra["prompt_token_ids_len"] = len(prompt_ids)
        if new > 0:  # token-carrying events: one step each at least (derive_decode_steps)
            extra["token_events"] = extra.get("token_events", 0) + 1
        return new, None

    def engine_stats(self, state: StreamState) -> EngineSpecStats | None:
        spec = state.extra.get("spec")
        if not spec:
            return None
        drafted_steps = spec.get("num_spec_steps")
        accepted = spec.get("num_accepted_draft_tokens")
        decode = past = None
        if accepted is not None:
            # num_spec_steps counts drafted steps only (n-gram: some steps carry no draft), and
            # drafts accepted on a step cut by max_tokens are counted though not emitted.
            decode, past = derive_decode_steps(state.tokens_total, accepted, drafted_steps,
                                               max(0, state.extra.get("token_events", 0) - 1))
        return EngineSpecStats(
            source="vllm.metrics",
            verify_steps=drafted_steps,
            draft_tokens=spec.get("num_draft_tokens"),
            accepted_tokens=accepted,
            acceptance_histogram=spec.get("acceptance_histogram"),
            draft_length=spec.get("num_spec_tokens"),
            raw=spec,
            decode_steps=decode,
            drafted_steps=drafted_steps,
            accepted_past_max_tokens=past,
        )

