"""Exact input length for one target model: re-fit prompts so the *templated* prompt is N target tokens.

The Throughput split counts lengths in o200k_base tokens (paper-faithful); a target model sees its
own tokenizer's count after its chat template (the paper measured 990-1011 target tokens for the
1k bucket). ``refit_rows`` rebuilds each prompt so that
``len(target.encode_chat([{"role": "user", "content": prompt}]))`` is exactly N:

- rows built by this project carry a recipe in ``src_id``: the prompt is re-rendered from the
  sources as head + body + tail and the body is cut (or the prompt padded) in *target* tokens,
  with the same rule and padding as the o200k fit, so the instruction is never cut;
- other rows (e.g. the published dataset): trailing ``"Answer now please.\\n"`` padding is
  removed, the last ``PROTECTED_TAIL_FRACTION`` of the text (at most ``PROTECTED_TAIL_CHARS``
  characters; it holds the instruction or question) is kept whole, and the text before it is
  the body that is cut, measured in target tokens.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from speedbench.dataset_builder.throughput.fit import PADDING, Codec, FitError, encode_body, fit_to_length
from speedbench.schema import DatasetRow

PROTECTED_TAIL_FRACTION = 0.25
PROTECTED_TAIL_CHARS = 2000


def target_codec(target) -> Codec:
    """A ``Codec`` over a :class:`speedbench.tokenization.target.TargetTokenizer`; counts the templated prompt."""
    def count(text: str) -> int:
        return len(target.encode_chat([{"role": "user", "content": text}], add_generation_prompt=True))

    def decode_prefix(tokens: Sequence[int], k: int) -> str:
        return target.decode(list(tokens[:k])) if k > 0 else ""

    return Codec(count=count, encode=target.encode, decode_prefix=decode_prefix)


def strip_padding(text: str, padding_chars: int | None = None) -> str:
    if padding_chars is not None:
        return text[: len(text) - padding_chars] if padding_chars else text
    # Unknown count: a cut-off padding prefix after at least one whole padding, then whole paddings.
    for length in range(len(PADDING) - 1, 0, -1):
        if text.endswith(PADDING[:length]) and text[:-length].endswith(PADDING):
            text = text[:-length]
            break
    while text.endswith(PADDING):
        text = text[: -len(PADDING)]
    return text


@dataclass(frozen=True)
class Pieces:
    head: str
    body: str
    tail: str


def pieces_of(row: DatasetRow, sources: Path | None) -> Pieces:
    """head/body/tail of a row: from its recipe when the sources are at hand, else by the tail heuristic."""
    from speedbench.dataset_builder.throughput.base import RECIPE, Recipe
    if sources is not None and RECIPE.match(row.src_id):
        from speedbench.dataset_builder.throughput.bucket import task_types
        task = task_types(str(sources), 0).get(row.sub_category)
        if task is not None:
            rendered = task.render(Recipe.parse(row.src_id).units)
            return Pieces(rendered.head, rendered.body, rendered.tail)
    from speedbench.dataset_builder.throughput.random_tokens import SUB_CATEGORY, parse_unit, random_text
    if row.sub_category == SUB_CATEGORY and RECIPE.match(row.src_id):
        # Random-token control: no instruction, the whole (regenerated) text is body.
        return Pieces("", random_text(*parse_unit(Recipe.parse(row.src_id).units[0])), "")
    padding_chars = None
    if RECIPE.match(row.src_id):
        padding_chars = Recipe.parse(row.src_id).padding_chars
    text = strip_padding(row.turns[0], padding_chars)
    protected = min(PROTECTED_TAIL_CHARS, int(len(text) * PROTECTED_TAIL_FRACTION))
    return Pieces("", text[: len(text) - protected], text[len(text) - protected:])


def refit_row(row: DatasetRow, codec: Codec, n_tokens: int, sources: Path | None = None) -> DatasetRow:
    pieces = pieces_of(row, sources)
    try:
        fitted = _fit(pieces, codec, n_tokens)
    except FitError:
        # A tokenizer much finer than o200k (e.g. a 512-token vocabulary) cannot hold the whole
        # head (passages to sort, candidate answers) in N tokens: cut into the head too, keep the tail.
        try:
            fitted = _fit(Pieces("", pieces.head + pieces.body, pieces.tail), codec, n_tokens)
        except FitError as error:
            raise FitError(f"row {row.question_id}: {error}") from error
    return replace(row, turns=[fitted.text] + list(row.turns[1:]))


def _fit(pieces: Pieces, codec: Codec, n_tokens: int):
    body_tokens = encode_body(codec, pieces.body, n_tokens)
    return fit_to_length(pieces.head, body_tokens, pieces.tail, n_tokens, codec,
                         head_tail_tokens=codec.count(pieces.head + pieces.tail))


def refit_rows(rows: list[DatasetRow], codec: Codec, n_tokens: int, sources: Path | None = None,
               progress: bool = False) -> list[DatasetRow]:
    iterator = rows
    if progress:
        from tqdm import tqdm
        iterator = tqdm(rows, desc=f"fit-isl {n_tokens}", unit="prompt", leave=False)
    return [refit_row(row, codec, n_tokens, sources) for row in iterator]
