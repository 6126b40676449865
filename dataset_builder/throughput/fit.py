"""Fit a prompt to an exact token count without ever cutting its task instruction.

A Throughput prompt is ``head + body + tail``: ``head`` and ``tail`` carry the task instruction
(and e.g. the question) and are never cut; ``body`` is the long context (code, book passages,
demonstrations, dialogue) and is cut at a token boundary. The paper's rule (docs/reference.md):

- too long: keep the first tokens (this can cut a word);
- too short: append the neutral suffix ``"Answer now please.\\n"`` (the reference code's
  padding; the paper's text says "please answer now") until long enough, then cut to N.

Tokens merge across the joins, so the count of ``head + decode(body[:k]) + tail`` is not exactly
``|head| + k + |tail|``. We encode each piece once, guess ``k`` from the piece counts, then
count the whole candidate once and correct ``k`` by the difference; it converges in one or two
full encodes. The count of the returned text is the count of exactly that string, so every
fitted prompt is verified by construction.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

PADDING = "Answer now please.\n"
MAX_ROUNDS = 24


class FitError(ValueError):
    """A prompt that cannot be brought to the requested length."""


@dataclass(frozen=True)
class FittedPrompt:
    text: str
    n_tokens: int
    body_tokens_used: int      # tokens of the body kept (before re-tokenization at the joins)
    padding_chars: int         # characters of padding appended (0 when the body was long enough)


@dataclass(frozen=True)
class Codec:
    """The tokenizer as three functions: count a whole text, encode a piece, decode a token prefix."""
    count: Callable[[str], int]
    encode: Callable[[str], list[int]]
    decode_prefix: Callable[[Sequence[int], int], str]


def o200k_codec() -> Codec:
    from speedbench.tokenization.o200k import o200k
    encoding = o200k()

    def decode_prefix(tokens: Sequence[int], k: int) -> str:
        # Back off to a UTF-8 character boundary: a token can end inside a multi-byte character.
        while k > 0:
            try:
                return encoding.decode_bytes(tokens[:k]).decode("utf-8")
            except UnicodeDecodeError:
                k -= 1
        return ""

    return Codec(count=lambda text: len(encoding.encode_ordinary(text)),
                 encode=encoding.encode_ordinary, decode_prefix=decode_prefix)


# A body is encoded in growing prefixes: first ``START_CHARS_PER_TOKEN`` characters per wanted
# token (more than o200k's ~4 for English prose and code), doubled until the prefix holds
# ``BODY_TOKEN_MARGIN`` tokens more than the prompt can use, or the body ends.
START_CHARS_PER_TOKEN = 5
BODY_TOKEN_MARGIN = 256


def encode_body(codec: Codec, body: str, n_tokens: int) -> list[int]:
    """Tokens of a prefix of ``body`` long enough for an N-token prompt.

    Encoding only a prefix keeps a 32k prompt from encoding a whole 100k-token source; the first
    N tokens are those of the full body, since tokenization is local and the prefix ends at least
    ``BODY_TOKEN_MARGIN`` tokens later. Build and resolve both call this, so a recipe's ``k``
    always refers to the same tokens.
    """
    if not body:
        return []
    cap = (n_tokens + BODY_TOKEN_MARGIN) * START_CHARS_PER_TOKEN
    while True:
        tokens = codec.encode(body[:cap])
        if cap >= len(body) or len(tokens) >= n_tokens + BODY_TOKEN_MARGIN:
            return tokens
        cap *= 2


def count_capped(text: str, n_tokens: int) -> int:
    """``min(o200k tokens of text, n_tokens)``, encoding no more of the text than needed."""
    from speedbench.tokenization.o200k import o200k
    encoding = o200k()
    cap = n_tokens * START_CHARS_PER_TOKEN
    while True:
        count = len(encoding.encode_ordinary(text[:cap]))
        if cap >= len(text) or count >= n_tokens:
            return min(count, n_tokens)
        cap *= 2


def padding_text(n_chars: int, padding: str = PADDING) -> str:
    """The first ``n_chars`` characters of the padding repeated."""
    repeats = n_chars // len(padding) + 1
    return (padding * repeats)[:n_chars]


def _pad_exactly(base: str, base_count: int, n_tokens: int, codec: Codec, padding: str) -> tuple[str, int] | None:
    """Append padding characters to ``base`` until its count is exactly ``n_tokens`` (None if it overshoots)."""
    per_char = len(padding) / max(1, len(codec.encode(padding)))
    n_chars = max(1, int((n_tokens - base_count) * per_char))
    seen: dict[int, int] = {}
    for _ in range(MAX_ROUNDS):
        text = base + padding_text(n_chars, padding)
        count = codec.count(text)
        seen[n_chars] = count
        if count == n_tokens:
            return text, n_chars
        step = int((n_tokens - count) * per_char) or (1 if count < n_tokens else -1)
        n_chars = max(0, n_chars + step)
        if n_chars in seen:
            # Oscillating around the target: walk one character at a time from the last undershoot.
            below = max((c for c, t in seen.items() if t < n_tokens), default=0)
            for chars in range(below + 1, below + 4 * len(padding)):
                text = base + padding_text(chars, padding)
                count = codec.count(text)
                if count == n_tokens:
                    return text, chars
                if count > n_tokens:
                    return None
            return None
    return None


def fit_to_length(head: str, body_tokens: Sequence[int], tail: str, n_tokens: int, codec: Codec,
                  padding: str = PADDING, head_tail_tokens: int | None = None) -> FittedPrompt:
    """``head + body[:k] + tail (+ padding)`` with exactly ``n_tokens`` tokens; ``head``/``tail`` intact.

    ``head_tail_tokens`` (optional) is the known token count of head and tail, saving an encode.
    """
    if head_tail_tokens is None:
        head_tail_tokens = codec.count(head) + codec.count(tail)
    if head_tail_tokens > n_tokens:
        raise FitError(f"instruction alone is {head_tail_tokens} tokens, more than the {n_tokens} allowed")
    k = min(len(body_tokens), n_tokens - head_tail_tokens)
    tried: dict[int, int] = {}
    for _ in range(MAX_ROUNDS):
        body = codec.decode_prefix(body_tokens, k)
        text = head + body + tail
        count = codec.count(text)
        tried[k] = count
        if count == n_tokens:
            return FittedPrompt(text, count, k, 0)
        if count > n_tokens:
            next_k = k - (count - n_tokens)
        elif k < len(body_tokens):
            next_k = min(len(body_tokens), k + (n_tokens - count))
        else:
            next_k = k  # body exhausted: pad
        if next_k == k or next_k in tried:
            # The target falls between two body lengths (a join merges tokens, e.g. "." + "\n\n"),
            # or the body is exhausted: pad, as the reference does, after the tail.
            # Pad from the longest body that stays under the target.
            under = sorted((kk for kk, c in tried.items() if c < n_tokens), reverse=True)
            if not under:
                under = [max(0, min(tried) - 1)]
            for kk in under[:3] + [max(0, under[0] - d) for d in (1, 2, 4, 8)]:
                base = head + codec.decode_prefix(body_tokens, kk) + tail
                base_count = tried.get(kk)
                if base_count is None:
                    base_count = codec.count(base)
                if base_count >= n_tokens:
                    continue
                padded = _pad_exactly(base, base_count, n_tokens, codec, padding)
                if padded is not None:
                    return FittedPrompt(padded[0], n_tokens, kk, padded[1])
            break
        if next_k < 0:
            raise FitError(f"cannot reach {n_tokens} tokens: the instruction alone is too long")
        k = next_k
    raise FitError(f"could not fit the prompt to exactly {n_tokens} tokens (tried body lengths {sorted(tried)})")
