"""llama.cpp ``llama-server`` (e.g. from the PyPI wheel ``xllamacpp``): the native ``/completion``.

The native endpoint is used, not ``/v1/completions``, for the token ids: with ``return_tokens``
its events carry ``tokens`` (the event's new ids), while the OpenAI-style stream drops them
(llama.cpp ``server_task_result_cmpl_partial::to_json_oaicompat`` has no such field; seen on the
xllamacpp build tested here too), so the records' ids are the engine's
(``TurnRecord.output_token_ids_source == "engine"``). A native event is ``{"content", "tokens",
"stop", "tokens_predicted", "tokens_evaluated", "timings"}``; the last has ``stop: true`` and
``stop_type`` (``limit`` -> finish reason ``length``, ``eos`` / ``word`` -> ``stop``), and no
``data: [DONE]`` follows, so a stream is complete when that event arrived. Events in the
OpenAI shape (``choices``) are still read, for a server spoken to at ``/v1/completions``.

The server streams one event per generated token even when speculating. With
``timings_per_token`` every event carries running ``timings``: ``predicted_n`` (cumulative
tokens, so the per-event delta is exact) and ``predicted_ms``, which only advances when a
forward pass finishes. Events of one verification step therefore share ``predicted_ms``; the
adapter uses it as the step key, so chunks become steps. The final event's
``timings.draft_n`` / ``draft_n_accepted`` give the request's statistics:
decode steps = completion_tokens - draft_n_accepted - 1 (the prefill token excluded). These are
all decode steps; the Prometheus ``llamacpp:spec_decode_num_drafts_total`` counts
``n_draft_verif_steps``, the steps that carried a draft, so the two are compared by tokens.
``cache_prompt`` is off so that repeated prompts are measured in full.
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import EngineAdapter, StreamError, StreamState, get_json
from speedbench.client.engines.openai import completion_payload, parse_openai_completion_event
from speedbench.metrics.acceptance.steps import derive_decode_steps
from speedbench.records import EngineSpecStats


class LlamaCppAdapter(EngineAdapter):
    name = "llamacpp"
    metrics_path = "/metrics"
    # llama-server closes the connection after every streamed response without saying so; a
    # pooled connection reused afterwards fails ("Can not write request body"). Asking for
    # Connection: close makes the client open a fresh connection per request instead.
    extra_headers = {"Connection": "close"}
    generate_path = "/completion"
    stream_ends_with_done = False  # the native stream ends with its ``stop: true`` event instead

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        model = {"model": self.model} if self.model else {}
        return completion_payload(self, prompt_ids, **model, ignore_eos=self.sampling.ignore_eos,
                                  cache_prompt=False, timings_per_token=True, return_tokens=True)

    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        timings = event.get("timings")
        before = state.tokens_total
        new = (parse_openai_completion_event(event, state, self.name) if "choices" in event
               else _parse_native_event(event, state))
        if event.get("tokens") is not None:
            state.add_token_ids(event["tokens"])  # with return_tokens: the event's new ids
        if timings and timings.get("predicted_n") is not None:
            # predicted_n is exact and cumulative; it overrides the one-per-text-event count.
            state.tokens_total = before + max(0, int(timings["predicted_n"]) - before)
            new = state.tokens_total - before
            state.extra["timings"] = timings
            _count_step(state, new, timings.get("predicted_ms"))
            return new, timings.get("predicted_ms")
        _count_step(state, new, None)
        return new, None

    def stream_finished(self, state: StreamState) -> bool:
        return bool(state.extra.get("stopped")) or state.finish_reason is not None

    def engine_stats(self, state: StreamState) -> EngineSpecStats | None:
        timings = state.extra.get("timings") or {}
        usage = state.usage or {}
        tokens = usage.get("completion_tokens", state.tokens_total)
        # The server's own speeds are kept too: llama.cpp's speed-bench client averages predicted_per_second
        # (speedbench.peers.llamacpp_bench).
        raw = {k: timings[k] for k in ("prompt_n", "predicted_n", "draft_n", "draft_n_accepted", "prompt_ms",
                                       "predicted_ms", "prompt_per_second", "predicted_per_second") if k in timings}
        raw["completion_tokens"] = tokens
        if "draft_n" not in timings:
            # Nothing was drafted: every token after the prefill came from its own step.
            return EngineSpecStats(source="llamacpp.timings", verify_steps=max(0, tokens - 1), draft_tokens=0,
                                   accepted_tokens=0, raw=raw, decode_steps=max(0, tokens - 1), drafted_steps=0,
                                   accepted_past_max_tokens=0)
        accepted = int(timings.get("draft_n_accepted", 0))
        # The timings say nothing of which steps drafted (the server's counters count those,
        # n_draft_verif_steps); verify_steps here are decode steps, and drafted_steps is unknown.
        # The streamed steps after the prefill's bound the decode steps from below: drafts accepted
        # on a last step that the slot's context (n_ctx) cut are counted in draft_n_accepted but never
        # emitted, so T - 1 - A alone undercounts the steps (a real run: 119 steps, 117 by the identity).
        decode, past = derive_decode_steps(tokens, accepted, None, max(0, state.extra.get("steps", 0) - 1))
        return EngineSpecStats(source="llamacpp.timings", verify_steps=decode,
                               draft_tokens=int(timings["draft_n"]), accepted_tokens=accepted, raw=raw,
                               decode_steps=decode, drafted_steps=None, accepted_past_max_tokens=past)

    async def describe_server(self, session) -> dict[str, Any]:
        info = await super().describe_server(session)
        props = await get_json(session, self.url + "/props")
        if props:
            info["engine_version"] = f"llama.cpp {props.get('build_info')}"
            info["props"] = {k: props.get(k) for k in ("total_slots", "model_path", "build_info", "bos_token",
                                                         "eos_token")}
        return info


_FINISH_REASONS = {"limit": "length", "eos": "stop", "word": "stop"}


def _count_step(state: StreamState, new: int, key) -> None:
    """Count the token-carrying steps as the stream merges events into chunks (one chunk per step key)."""
    if new <= 0:
        return
    extra = state.extra
    if key is None or key != extra.get("step_key") or not extra.get("steps"):
        extra["steps"] = extra.get("steps", 0) + 1
    extra["step_key"] = key


def _parse_native_event(event: dict[str, Any], state: StreamState) -> int:
    """One native ``/completion`` event: text, finish reason, usage; new tokens from the
    cumulative ``tokens_predicted`` (``timings.predicted_n`` overrides it when sent)."""
    if "error" in event:
        raise StreamError("engine_error", f"llamacpp error event: {str(event['error'])[:300]}")
    if "content" not in event or "tokens_predicted" not in event:
        raise StreamError("malformed", f"llamacpp event without 'content'/'tokens_predicted': {str(event)[:200]}")
    state.last_event = event
    state.text += event["content"] or ""
    new = max(0, int(event["tokens_predicted"]) - state.tokens_total)
    state.tokens_total += new
    if event.get("stop"):
        state.extra["stopped"] = True
        state.finish_reason = _FINISH_REASONS.get(event.get("stop_type"), event.get("stop_type") or None)
        state.usage = {"completion_tokens": int(event["tokens_predicted"]),
                       "prompt_tokens": int(event.get("tokens_evaluated") or 0)}
    return new
