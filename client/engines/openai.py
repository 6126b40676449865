"""Generic OpenAI-compatible ``/v1/completions`` server: token-id prompt, no SD statistics.

New tokens per chunk come from cumulative ``usage`` when the server streams it
(``continuous_usage_stats``), otherwise each non-empty choice counts as one token (an
approximation the results flag: ``chunks_are_steps`` is False).
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import EngineAdapter, StreamError, StreamState, request_seed, usage_delta


class OpenAIAdapter(EngineAdapter):
    name = "openai"
    chunks_are_steps = False

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        return completion_payload(self, prompt_ids, model=self.model or "",
                                  stream_options={"include_usage": True})

    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        return parse_openai_completion_event(event, state, self.name), None


def completion_payload(adapter: EngineAdapter, prompt_ids: list[int], **engine_fields: Any) -> dict[str, Any]:
    """The streamed ``/v1/completions`` body the OpenAI-style engines share.

    Sampling options first, then each engine's own fields, then the user's ``--extra-body``
    (last, so a user can override anything).
    """
    s = adapter.sampling
    payload: dict[str, Any] = {"prompt": prompt_ids, "max_tokens": s.max_tokens,
                               "temperature": s.temperature, "stream": True}
    if s.seed is not None:
        payload["seed"] = request_seed(s, prompt_ids)
    if s.top_p is not None:
        payload["top_p"] = s.top_p
    payload.update(engine_fields)
    payload.update(adapter.extra_body)
    return payload


def parse_openai_completion_event(event: dict[str, Any], state: StreamState, engine: str) -> int:
    """Shared by the OpenAI-style adapters: text, finish reason, id; tokens from usage or ids.

    Runs once per streamed event: each field is looked up once."""
    choices = event.get("choices", _ABSENT)
    if choices is _ABSENT:
        if "error" in event:
            raise StreamError("engine_error", f"{engine} error event: {str(event['error'])[:300]}")
        raise StreamError("malformed", f"{engine} event without 'choices': {str(event)[:200]}")
    state.last_event = event
    if state.response_id is None:
        response_id = event.get("id")
        if response_id:
            state.response_id = response_id
    new_from_ids = None
    text = None
    if choices:
        choice = choices[0]
        text = choice.get("text")
        if text:
            state.text += text
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            state.finish_reason = finish_reason
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            new_from_ids = len(token_ids)
            state.add_token_ids(token_ids)
    from_usage = usage_delta(event, state)
    if new_from_ids is not None:
        new = new_from_ids
    elif from_usage is not None:
        new = from_usage
    else:
        new = 1 if text else 0
    state.tokens_total += new
    return new


_ABSENT = object()
