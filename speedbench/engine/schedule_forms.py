"""A :class:`~speedbench.engine.draft_schedule.DraftSchedule` in each engine's own form.

- **vLLM** (0.32, ``vllm/v1/spec_decode/dynamic/utils.py``): ``--speculative-config`` keys
  ``num_speculative_tokens`` (the largest K: the engine allocates for it) and
  ``num_speculative_tokens_per_batch_size``, a list of ``[range_start, range_end, K]`` with
  inclusive ranges. vLLM checks that the ranges start at 1, do not overlap and K >= 0; it carries
  the previous K through a gap and the last K beyond the last range, and silently lowers a K above
  ``num_speculative_tokens`` to it (we refuse gaps and such K instead: :mod:`draft_schedule`). The
  batch size is the number of requests the scheduler runs in that step (prefills included).
- **TensorRT-LLM** (``DecodingBaseConfig.draft_len_schedule`` in ``tensorrt_llm/llmapi/llm_args.py``,
  the PyTorch backend): a mapping from batch-size thresholds to draft lengths, ``{1: 4, 4: 2, 8: 0}``
  meaning batch size >= 1 drafts 4, >= 4 drafts 2, >= 8 none; it must contain ``1`` and
  ``draft_len_schedule[1]`` must equal ``max_draft_len``, and no draft length may exceed it. So a
  schedule whose K at batch size 1 is not its largest cannot be written for TensorRT-LLM.
- **SGLang** (0.5.23, ``sglang/srt/speculative/adaptive_spec_params.py``): ``--speculative-adaptive
  --speculative-adaptive-config FILE``, a JSON object whose integer-string keys are batch-size
  thresholds, each a slot ``{"candidate_steps": [...]}``; a batch goes to the slot with the largest
  key not above its size (the smallest slot below that). Each slot moves between its candidate
  steps with an EMA of the acceptance it sees; a slot with one candidate stays at it, so one
  candidate per range pins K per batch size. SGLang runs adaptive only with EAGLE / EAGLE3 at
  top-k 1 (``adaptive_unsupported_reason``); otherwise it logs "speculative_adaptive disabled" and
  serves static steps.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from speedbench import engines
from speedbench.engine.draft_schedule import DraftSchedule, DraftScheduleError
from speedbench.engines.spec import ScheduleForm


def vllm_schedule(schedule: DraftSchedule, max_k: int | None = None) -> dict[str, Any]:
    """The two ``--speculative-config`` keys; ``max_k``: ``num_speculative_tokens`` (default: the
    schedule's largest K)."""
    top = schedule.max_k if max_k is None else max_k
    if top < 1:
        raise DraftScheduleError(f"schedule {schedule.text!r}: K = 0 at every batch size; serve without "
                                 "speculation instead (vLLM needs num_speculative_tokens >= 1)")
    return {"num_speculative_tokens": top,
            "num_speculative_tokens_per_batch_size": [[r.low, r.high, r.k] for r in schedule.ranges]}


def trtllm_schedule(schedule: DraftSchedule, max_k: int | None = None) -> dict[str, Any]:
    """``speculative_config`` keys for ``trtllm-serve --extra_llm_api_options`` (YAML) or the LLM API:
    ``max_draft_len`` and ``draft_len_schedule`` (thresholds: each range's start)."""
    first, top = schedule.ranges[0], schedule.max_k
    if first.k < 1:
        raise DraftScheduleError(f"range {first.text!r}: TensorRT-LLM needs draft_len_schedule[1] = max_draft_len "
                                 ">= 1; no speculation at batch size 1 means serving without speculation")
    if first.k != top:
        worst = next(r for r in schedule.ranges if r.k == top)
        raise DraftScheduleError(f"range {worst.text!r}: TensorRT-LLM requires draft_len_schedule[1] = "
                                 f"max_draft_len to be the largest draft length, but batch size 1 drafts "
                                 f"{first.k} (range {first.text!r})")
    return {"max_draft_len": top, "draft_len_schedule": {r.low: r.k for r in schedule.ranges}}


def sglang_schedule(schedule: DraftSchedule, max_k: int | None = None) -> dict[str, Any]:
    """SGLang's server arguments: ``speculative_num_steps`` (the largest K), ``speculative_adaptive`` and
    the adaptive config object (to be saved as the JSON file ``--speculative-adaptive-config`` names)."""
    top = schedule.max_k if max_k is None else max_k
    return {"speculative_num_steps": top, "speculative_adaptive": True,
            "speculative_adaptive_config": {str(r.low): {"candidate_steps": [r.k]} for r in schedule.ranges}}


def schedule_engines() -> tuple[str, ...]:
    """The engines that take a schedule (their spec's ``schedule_form``, :mod:`speedbench.engines`)."""
    return engines.names_with("schedule_form")


def schedule_form(engine: str) -> ScheduleForm:
    """``engine``'s :class:`~speedbench.engines.spec.ScheduleForm`; an error naming the known ones."""
    spec = engines.REGISTRY.get(engine)
    if spec is None or spec.schedule_form is None:
        raise DraftScheduleError(f"no schedule form for engine {engine!r}; known: {', '.join(schedule_engines())}")
    return spec.schedule_form


def engine_form(schedule: DraftSchedule, engine: str, max_k: int | None = None) -> dict[str, Any]:
    """The schedule's keys in ``engine``'s form (its spec's ``schedule_form.writer``)."""
    module, name = schedule_form(engine).writer.split(":")
    return getattr(import_module(module), name)(schedule, max_k)
