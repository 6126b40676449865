"""Where a model's thinking ends: the phase markers, from its tokenizer and chat template.

Detection (first match wins), giving :class:`speedbench.metrics.phases.PhaseMarkers`:

1. **harmony** (GPT-OSS): the chat template writes ``<|channel|>``; the answer is the ``final``
   channel, so the boundary is ``<|channel|>final<|message|>`` and thinking opens with
   ``<|channel|>analysis<|message|>``;
2. **think** (Qwen3, DeepSeek-R1 and their templates): the template writes ``</think>``;
   thinking opens with ``<think>``;
3. **think in the vocabulary**: no template marker, but the tokenizer has ``</think>`` as one
   added token.

Each marker is encoded with the target tokenizer, without special tokens added (what the model
emits: ``</think>`` is id 151668 in Qwen3). A marker that is not a single added token is matched
by its standalone encoding, which neighbouring text could merge differently: the result says so
(``note``). The *prompt state* comes from rendering the template's generation prompt for a
one-message conversation: the text after the message opens a thinking block (``<think>`` without
``</think>``: ``"open"``, DeepSeek-R1), holds a whole one (``"closed"``, e.g. an empty block that
switches thinking off), or neither (``"none"``, Qwen3's default, harmony).

Overrides: explicit token ids (``--phase-boundary-ids 151668`` or ``1,2,3``) replace the detected
boundary; ``--phase-prompt-state`` replaces the prompt state. A tokenizer without any marker
(e.g. stories260K) gives no markers and the reason, never an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jinja2 import TemplateError

from speedbench.metrics.phases import PROMPT_CLOSED, PROMPT_NONE, PROMPT_OPEN, PROMPT_STATES, PhaseMarkers
from speedbench.tokenization.target import TargetTokenizer, TokenizerError

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
HARMONY_CHANNEL = "<|channel|>"
HARMONY_FINAL = "<|channel|>final<|message|>"
HARMONY_ANALYSIS = "<|channel|>analysis<|message|>"
_PROBE = "phase-boundary probe"  # the one message rendered to see the generation prompt


class PhaseBoundaryError(ValueError):
    """An override that cannot be used (bad token ids, unknown prompt state)."""


@dataclass(frozen=True)
class BoundaryDetection:
    """The markers found (None: the model has no phase boundary) and why / how."""

    markers: PhaseMarkers | None
    reason: str
    note: str | None = None

    def to_dict(self) -> dict:
        return {"markers": None if self.markers is None else self.markers.to_dict(), "reason": self.reason,
                "note": self.note}


def parse_boundary_ids(text: str) -> tuple[int, ...]:
    """``"151668"`` or ``"1,2,3"`` -> token ids (non-negative integers, at least one)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        ids = tuple(int(p) for p in parts)
    except ValueError:
        raise PhaseBoundaryError(f"--phase-boundary-ids: {text!r} is not a comma-separated list of token ids") from None
    if not ids or any(i < 0 for i in ids):
        raise PhaseBoundaryError(f"--phase-boundary-ids: {text!r}: token ids must be non-negative integers")
    return ids


def _single_added_token(tokenizer: TargetTokenizer, text: str) -> int | None:
    # tokenizers' own lookup: the id when ``text`` is one vocabulary entry (added tokens included).
    return tokenizer._tokenizer.token_to_id(text)


def _encode_marker(tokenizer: TargetTokenizer, text: str) -> tuple[tuple[int, ...], str | None]:
    single = _single_added_token(tokenizer, text)
    if single is not None:
        return (int(single),), None
    ids = tuple(tokenizer.encode(text))
    return ids, (f"{text!r} is not one token: matched by its standalone encoding {list(ids)}, which neighbouring "
                 "text can merge differently")


def prompt_state(tokenizer: TargetTokenizer, open_text: str, close_text: str) -> str:
    """Whether the generation prompt opens (``"open"``), closes (``"closed"``) or leaves thinking alone."""
    if not tokenizer.has_chat_template:
        return PROMPT_NONE
    try:
        rendered = tokenizer.render_chat([{"role": "user", "content": _PROBE}], add_generation_prompt=True)
    except (TokenizerError, TemplateError, TypeError, KeyError, ValueError):
        return PROMPT_NONE  # a template that needs more than one user message: no claim about the prompt
    tail = rendered.rpartition(_PROBE)[2]
    opened, closed = tail.rfind(open_text), tail.rfind(close_text)
    if closed >= 0 and closed > opened:
        return PROMPT_CLOSED
    return PROMPT_OPEN if opened >= 0 else PROMPT_NONE


def detect_markers(tokenizer: TargetTokenizer) -> BoundaryDetection:
    """The phase markers of ``tokenizer`` (see the module doc), or none with the reason."""
    template = tokenizer.chat_template or ""
    if HARMONY_CHANNEL in template:
        boundary, note = _encode_marker(tokenizer, HARMONY_FINAL)
        opening, _ = _encode_marker(tokenizer, HARMONY_ANALYSIS)
        markers = PhaseMarkers(boundary_ids=boundary, open_ids=opening, source="template:harmony",
                               marker_text=HARMONY_FINAL,
                               prompt_state=prompt_state(tokenizer, HARMONY_ANALYSIS, HARMONY_FINAL))
        return BoundaryDetection(markers, "chat template writes harmony channels", note)
    in_vocabulary = _single_added_token(tokenizer, THINK_CLOSE) is not None
    if THINK_CLOSE in template or in_vocabulary:
        boundary, note = _encode_marker(tokenizer, THINK_CLOSE)
        opening, _ = _encode_marker(tokenizer, THINK_OPEN)
        source = "template:think" if THINK_CLOSE in template else "tokenizer:think"
        markers = PhaseMarkers(boundary_ids=boundary, open_ids=opening, source=source, marker_text=THINK_CLOSE,
                               prompt_state=prompt_state(tokenizer, THINK_OPEN, THINK_CLOSE))
        reason = "chat template writes </think>" if THINK_CLOSE in template else "</think> is a vocabulary token"
        return BoundaryDetection(markers, reason, note)
    return BoundaryDetection(None, f"no phase boundary: the tokenizer in {tokenizer.folder} has no </think> or "
                                   "harmony channel markers (give --phase-boundary-ids to set one)")


def resolve_markers(tokenizer_folder: str | Path | None, boundary_ids: str | None = None,
                    prompt_state_override: str | None = None) -> BoundaryDetection:
    """The markers for a run: detected from ``tokenizer_folder``, with the overrides applied.

    ``boundary_ids`` (``"151668"``, ``"1,2,3"``) works without any tokenizer; a folder that is
    missing or unreadable then only costs the detection (the reason says so).
    """
    if prompt_state_override is not None and prompt_state_override not in PROMPT_STATES:
        raise PhaseBoundaryError(f"--phase-prompt-state: {prompt_state_override!r} is not one of {PROMPT_STATES}")
    detected = BoundaryDetection(None, "no tokenizer folder to detect a phase boundary from")
    if tokenizer_folder and Path(tokenizer_folder, "tokenizer.json").is_file():
        try:
            detected = detect_markers(TargetTokenizer.from_folder(tokenizer_folder))
        except TokenizerError as error:
            detected = BoundaryDetection(None, f"no phase boundary: {error}")
    elif tokenizer_folder:
        detected = BoundaryDetection(None, f"no phase boundary: {Path(tokenizer_folder) / 'tokenizer.json'} not found")
    if boundary_ids is None:
        if detected.markers is not None and prompt_state_override is not None:
            markers = PhaseMarkers(**{**detected.markers.__dict__, "prompt_state": prompt_state_override})
            return BoundaryDetection(markers, detected.reason + "; prompt state overridden", detected.note)
        return detected
    base = detected.markers
    markers = PhaseMarkers(boundary_ids=parse_boundary_ids(boundary_ids), open_ids=base.open_ids if base else (),
                           prompt_state=prompt_state_override or (base.prompt_state if base else PROMPT_NONE),
                           source="ids", marker_text=None)
    return BoundaryDetection(markers, "boundary token ids given (--phase-boundary-ids)")


__all__ = ["BoundaryDetection", "PhaseBoundaryError", "detect_markers", "parse_boundary_ids", "prompt_state",
           "resolve_markers"]
