"""Prompt ids of a conversation's later turns, with the model's earlier answers as it produced them.

A later turn's prompt is the whole conversation rendered as one string (the chat template, or in
completion mode the turns joined by a blank line) and encoded **at once**, exactly as an engine
would encode it; then each earlier answer's tokens in that encoding are replaced by the ids the
engine generated for it (which a re-encoding of the answer's text need not reproduce).

Encoding the text between answers piece by piece is *not* the same: a SentencePiece tokenizer
(Llama-2, Mistral, stories260K) starts every separately encoded piece with a word-start ``▁``, so
each earlier answer would add a token the engine never sees (``'.', '▁', '<0x0A>'`` instead of
``'.', '<0x0A>'``). Splicing by character offsets in the one encoding avoids that for
SentencePiece and byte-level BPE alike.

An answer is spliced when token boundaries of the whole encoding fall exactly at its first and
last character. When a token of the whole encoding crosses the answer's edge (Llama-2's
``[/INST] `` joins its space to the answer's first word; a byte-level BPE merges an answer's
closing ``\n`` with the blank line after it), nothing can be replaced exactly: if the tokens
covering the answer are the engine's ids anyway, the prompt carries them (spliced); otherwise the
answer enters as the whole encoding's own tokens, counted in :attr:`TurnIds.reencoded_answers`
and, since the prompt then differs from the conversation with the engine's answer in it, in
:attr:`TurnIds.mismatched_answers` (records keep both per later turn). When the template changes
an answer's text (one that drops earlier reasoning, or trims), splicing would send something the
template never renders: the whole prompt is then the plain encoding of the rendered text, as an
engine given the conversation would encode it (counted as re-encoded, not as a mismatch).
"""
from __future__ import annotations

from dataclasses import dataclass

PROMPT_MODES = ("chat", "completion")
_ANSWER_MARK = "\x00speedbench-answer-{}\x00"  # stands in for an answer while the template renders


@dataclass(frozen=True)
class TurnIds:
    """A turn's prompt ids and how its earlier answers entered: spliced as the engine's ids, or as text."""

    ids: list[int]
    spliced_answers: int = 0  # earlier answers carried as the engine's ids
    reencoded_answers: int = 0  # earlier answers with engine ids that entered as text instead
    mismatched_answers: int = 0  # of those, answers whose tokens in the prompt are not the engine's ids


def render(tokenizer, messages: list[dict[str, str]], prompt_mode: str) -> str:
    """The conversation as the one string an engine would encode."""
    if prompt_mode == "chat":
        return tokenizer.render_chat(messages, add_generation_prompt=True)
    if prompt_mode == "completion":
        return "\n\n".join(m["content"] for m in messages)
    raise ValueError(f"prompt mode {prompt_mode!r}: expected one of {', '.join(PROMPT_MODES)}")


def adds_special_tokens(tokenizer, prompt_mode: str) -> bool:
    """Whether the tokenizer's own special tokens (BOS) open the prompt: not when a template writes them."""
    return prompt_mode == "completion" or not tokenizer.has_chat_template


def encode_turn(tokenizer, messages: list[dict[str, str]], prompt_mode: str) -> list[int]:
    """Token ids of a conversation ending in a user turn, every answer as text."""
    text = render(tokenizer, messages, prompt_mode)
    return tokenizer.encode_with_offsets(text, adds_special_tokens(tokenizer, prompt_mode))[0]


def answer_spans(tokenizer, messages: list[dict[str, str]], prompt_mode: str,
                 indices: list[int]) -> tuple[str, list[tuple[int, int]]] | None:
    """The rendered text and the character span of each message in ``indices`` (in order), or None
    when the template does not write those messages' contents verbatim, once each."""
    text = render(tokenizer, messages, prompt_mode)
    marks = {i: _ANSWER_MARK.format(i) for i in indices}
    marked = render(tokenizer, [dict(m, content=marks[i]) if i in marks else m for i, m in enumerate(messages)],
                    prompt_mode)
    spans, shift, cursor = [], 0, 0
    for i in indices:
        if marked.count(marks[i]) != 1:
            return None
        at = marked.index(marks[i])
        if at < cursor:
            return None
        start = at + shift
        spans.append((start, start + len(messages[i]["content"])))
        shift += len(messages[i]["content"]) - len(marks[i])
        cursor = at
    rebuilt = marked
    for i in indices:
        rebuilt = rebuilt.replace(marks[i], messages[i]["content"], 1)
    return (text, spans) if rebuilt == text else None


def _token_range(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """``(p, q)``: tokens ``p..q-1`` cover exactly characters ``start..end``; None when a token
    straddles either edge. Zero-width tokens (added specials such as a BOS) are never in the span."""
    spans = [(j, a, b) for j, (a, b) in enumerate(offsets) if b > a]
    if any(a < edge < b for _, a, b in spans for edge in (start, end)):
        return None
    inside = [(j, a, b) for j, a, b in spans if a >= start and b <= end]
    if not inside or inside[0][1] != start or inside[-1][2] != end:
        return None
    return inside[0][0], inside[-1][0] + 1


def _covering_range(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """``(p, q)``: the tokens that hold any character of ``start..end`` (those crossing its edges too)."""
    touching = [j for j, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (touching[0], touching[-1] + 1) if touching else None


def answer_body(tokenizer, ids: list[int]) -> list[int]:
    """An answer's ids without the stop token that ended it: the end-of-sequence id or another special
    token (an end-of-turn id). Engines stream it, its text is empty, and the template writes the
    turn's end itself."""
    stops = set(getattr(tokenizer, "special_ids", ()))
    if tokenizer.eos_id is not None:
        stops.add(tokenizer.eos_id)
    return list(ids[:-1] if ids and ids[-1] in stops else ids)


def encode_turn_exact(tokenizer, messages: list[dict[str, str]], prompt_mode: str,
                      answer_ids: list[list[int] | None]) -> TurnIds:
    """The turn's prompt: the whole conversation encoded at once, each earlier answer's tokens
    replaced by the engine's ids ``answer_ids[k]`` for the k-th assistant message (None: its text)."""
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    given = {i: ids for i, ids in zip(assistants, answer_ids) if ids is not None}
    located = answer_spans(tokenizer, messages, prompt_mode, sorted(given)) if given else None
    text = located[0] if located else render(tokenizer, messages, prompt_mode)
    ids, offsets = tokenizer.encode_with_offsets(text, adds_special_tokens(tokenizer, prompt_mode))
    if located is None:
        return TurnIds(list(ids), 0, len(given))
    out, cursor, spliced, mismatched = [], 0, 0, 0
    for i, (start, end) in zip(sorted(given), located[1]):
        body = answer_body(tokenizer, given[i])
        if start == end and not body:  # an empty answer (the stop token alone): nothing to carry
            spliced += 1
            continue
        found = _token_range(offsets, start, end)
        if found is None:  # a token crosses an edge: exact only if the covering tokens are the engine's
            covering = _covering_range(offsets, start, end)
            found = covering if covering is not None and list(ids[covering[0]:covering[1]]) == body else None
        if found is None or found[0] < cursor:
            mismatched += 1
            continue
        p, q = found
        out += ids[cursor:p] + body
        cursor, spliced = q, spliced + 1
    return TurnIds(out + list(ids[cursor:]), spliced, len(given) - spliced, mismatched)
