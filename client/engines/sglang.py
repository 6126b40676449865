"""SGLang: its native ``/generate`` route with ``input_ids`` (the default), or, when the user chooses
``api="openai"``, its OpenAI-style ``/v1/completions``.

Each SSE event carries the *cumulative* ``text`` (unless the server runs with
``--incremental-streaming-output``) and cumulative ``meta_info.completion_tokens``; the delta
of the latter is the step's token count. The final event's ``meta_info`` carries
``spec_verify_ct`` and, in newer releases, ``spec_num_correct_drafts`` /
``spec_num_proposed_drafts`` / a histogram (names vary across releases, parsed defensively).
``finish_reason`` is an object (``{"type": "length", "length": N}``). The histogram
``spec_correct_drafts_histogram`` grows only as far as the largest count a request accepted
(``Req.update_spec_correct_drafts_histogram``), so its length is not K + 1, and
``spec_cap_length`` is a per-step mean: K comes from ``/server_info`` or ``--draft-length``.
With a draft *tree* (``speculative_eagle_topk`` > 1) ``spec_num_proposed_drafts`` counts tree
nodes (``num_draft_tokens - 1`` per verify) while at most ``num_steps`` (the depth) are accepted
per verify: K is the depth, the histogram is h_0..h_depth, and acceptance per position is by
depth; accepted / proposed is a per-node rate, not comparable with a chain's (the AL is).
Older releases name the counts ``spec_accept_token_num`` / ``spec_draft_token_num``.
``output_ids`` carries the generated ids, cumulative or per event (told apart by length). SGLang's
Prometheus metrics exist only with ``--enable-metrics``. SGLang's own
``spec_accept_length`` = completion_tokens / spec_verify_ct counts the prefill token too; the
normalized statistics use 1 + accepted / verify_steps like the other engines.

``/v1/completions`` streams text deltas and no statistics unless the request asks: with
``return_spec_tokens_details`` the same spec_* fields (plus ``spec_cap_length``,
``spec_block_accept_length``, ``spec_cap_lens_histogram``) come as ``sglext.spec_tokens_details`` in
a chunk with empty ``choices`` just before the usage chunk (0.5.23, captured); ``return_token_ids``
adds each chunk's new ids and ``stream_options.continuous_usage_stats`` a cumulative ``usage``
(``serving_completions.py``), so steps are counted exactly on this route too.
"""
from __future__ import annotations

from typing import Any

from speedbench.client.engines.base import (
    EngineAdapter,
    StreamError,
    StreamState,
    get_json,
    require,
)
from speedbench.client.engines.openai import completion_payload, parse_openai_completion_event
from speedbench.metrics.acceptance.steps import derive_decode_steps
from speedbench.records import EngineSpecStats

_HISTOGRAM_KEYS = ("spec_correct_drafts_histogram", "spec_accept_histogram", "spec_acceptance_histogram")
# Newer releases name the counts spec_num_correct_drafts / spec_num_proposed_drafts, older ones
# spec_accept_token_num / spec_draft_token_num.
_ACCEPTED_KEYS = ("spec_num_correct_drafts", "spec_accept_token_num")
_DRAFTED_KEYS = ("spec_num_proposed_drafts", "spec_draft_token_num")
# What a run records of /server_info: enough to tell the speculation and K (chain or tree).
SERVER_INFO_KEYS = ("speculative_algorithm", "speculative_num_draft_tokens", "speculative_num_steps",
                    "speculative_eagle_topk", "decode_log_interval")
# The routes a user can choose (``--api``): SGLang's own, or its OpenAI-style one.
APIS = ("native", "openai")
# Where each route's statistics come from (EngineSpecStats.source).
STATS_SOURCES = {"native": "sglang.meta_info", "openai": "sglang.spec_tokens_details"}


def _first(meta: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    value = next((meta[k] for k in keys if meta.get(k) is not None), None)
    return None if value is None else int(value)


def _take_output_ids(ids: Any, state: StreamState, total: int, new: int) -> None:
    """Keep the ids of ``output_ids``, which releases send either cumulatively (the whole output
    so far, without ``--incremental-streaming-output``) or as this event's delta (with it, and in
    older releases); the length against ``completion_tokens`` tells which."""
    if ids is None:
        return
    if not isinstance(ids, list):
        state.token_ids_broken = True
    elif len(ids) == total and total != new:
        state.token_ids = None
        state.add_token_ids(ids)  # cumulative: the whole output so far replaces what was kept
    elif len(ids) == new:
        state.add_token_ids(ids)
    else:
        state.token_ids_broken = True


class SGLangAdapter(EngineAdapter):
    name = "sglang"
    apis = APIS

    @property
    def generate_path(self) -> str:
        return "/v1/completions" if self.api == "openai" else "/generate"

    def build_payload(self, prompt_ids: list[int]) -> dict[str, Any]:
        if self.api == "openai":
            # The model is optional on SGLang's route (the served model by default).
            model = {"model": self.model} if self.model else {}
            return completion_payload(
                self, prompt_ids, **model, ignore_eos=self.sampling.ignore_eos,
                stream_options={"include_usage": True, "continuous_usage_stats": True},
                return_token_ids=True, return_spec_tokens_details=True)
        s = self.sampling
        sampling: dict[str, Any] = {"max_new_tokens": s.max_tokens, "temperature": s.temperature,
                                    "ignore_eos": s.ignore_eos}
        if s.seed is not None:
            sampling["sampling_seed"] = s.seed
        if s.top_p is not None:
            sampling["top_p"] = s.top_p
        payload: dict[str, Any] = {"input_ids": prompt_ids, "sampling_params": sampling, "stream": True}
        payload.update(self.extra_body)
        return payload

    def parse_event(self, event: dict[str, Any], state: StreamState) -> tuple[int, Any]:
        if self.api == "openai":
            return self._parse_completion_event(event, state), None
        if "error" in event and "meta_info" not in event:
            raise StreamError("engine_error", f"sglang error event: {str(event['error'])[:300]}")
        meta = require(event, "meta_info", self.name)
        if not isinstance(meta, dict) or "completion_tokens" not in meta:
            raise StreamError("malformed", f"sglang meta_info without completion_tokens: {str(meta)[:200]}")
        state.last_event = event
        text = event.get("text")
        if isinstance(text, str):
            # Cumulative text; a server with --incremental-streaming-output sends deltas instead.
            state.text = text if text.startswith(state.text) else state.text + text
        if state.response_id is None and meta.get("id"):
            state.response_id = meta["id"]
        finish = meta.get("finish_reason")
        if finish:
            state.finish_reason = finish.get("type") if isinstance(finish, dict) else str(finish)
        state.extra["meta"] = meta
        total = int(meta["completion_tokens"])
        new = total - state.tokens_total
        if new < 0:
            raise StreamError("malformed", f"sglang completion_tokens went backwards ({state.tokens_total} -> {total})")
        _take_output_ids(event.get("output_ids"), state, total, new)
        state.tokens_total = total
        if new > 0:  # token-carrying events: one step each at least (derive_decode_steps)
            state.extra["token_events"] = state.extra.get("token_events", 0) + 1
        return new, None

    def _parse_completion_event(self, event: dict[str, Any], state: StreamState) -> int:
        """``/v1/completions``: ids and usage per chunk; the statistics from the ``sglext`` chunk."""
        new = parse_openai_completion_event(event, state, self.name)
        sglext = event.get("sglext")
        details = sglext.get("spec_tokens_details") if isinstance(sglext, dict) else None
        if details is not None:
            if isinstance(details, list) and len(details) == 1:
                details = details[0]  # one per choice when n > 1; we send n = 1
            if not isinstance(details, dict) or "spec_verify_ct" not in details:
                raise StreamError("malformed", f"sglang sglext.spec_tokens_details: {str(details)[:200]}")
            state.extra["meta"] = details
        # Token-carrying chunks are one step each at least (derive_decode_steps); a usage chunk
        # (no choices) that brings tokens the text chunks did not count is no step.
        if new > 0 and event.get("choices"):
            state.extra["token_events"] = state.extra.get("token_events", 0) + 1
        return new

    def engine_stats(self, state: StreamState) -> EngineSpecStats | None:
        meta = state.extra.get("meta") or {}
        if meta.get("spec_verify_ct") is None:
            return None
        # Every SGLang decode step (EAGLE / n-gram / draft model) is one verify call.
        verify = int(meta["spec_verify_ct"])
        tokens = int(meta.get("completion_tokens", state.tokens_total))
        accepted = _first(meta, _ACCEPTED_KEYS)
        if accepted is None:
            accepted = max(0, tokens - verify - 1)
        histogram = next((list(meta[k]) for k in _HISTOGRAM_KEYS if isinstance(meta.get(k), list)), None)
        raw = {k: v for k, v in meta.items() if k.startswith("spec_") or k == "completion_tokens"}
        decode, past = derive_decode_steps(tokens, int(accepted), verify, max(0, state.extra.get("token_events", 0) - 1))
        return EngineSpecStats(
            source=STATS_SOURCES[self.api],
            verify_steps=verify,
            draft_tokens=_first(meta, _DRAFTED_KEYS),
            accepted_tokens=int(accepted),
            acceptance_histogram=histogram,
            # Neither the histogram (it grows only to the largest count accepted) nor
            # spec_cap_length (a per-step mean) is K: K comes from the server info (recorded in the
            # manifest, read by speedbench.metrics.acceptance.draft_length.server_draft_length) or the user.
            draft_length=self.draft_length,
            raw=raw,
            decode_steps=decode,
            drafted_steps=verify,
            accepted_past_max_tokens=past,
        )

    async def describe_server(self, session) -> dict[str, Any]:
        info: dict[str, Any] = {"model_id": None, "engine_version": None}
        model_info = await get_json(session, self.url + "/get_model_info")
        if model_info:
            info["model_id"] = model_info.get("model_path")
        # /server_info since 0.5 (/get_server_info, still answered, logs a deprecation warning).
        server_info = (await get_json(session, self.url + "/server_info")
                       or await get_json(session, self.url + "/get_server_info"))
        if server_info:
            if server_info.get("version"):
                info["engine_version"] = f"sglang {server_info['version']}"
            # speculative_eagle_topk > 1 means a draft tree: K is then its depth (num_steps), and
            # num_draft_tokens - 1 its node count (speedbench.metrics.acceptance.draft_length.server_draft_length).
            info["server_info"] = {k: server_info.get(k) for k in SERVER_INFO_KEYS if k in server_info}
        return info

