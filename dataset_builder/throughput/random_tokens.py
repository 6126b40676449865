"""The synthetic control: prompts of uniformly random o200k_base tokens (``random_1k`` ... ``random_32k``).

The paper found that random-token prompts overestimate speculative-decoding throughput by 23%
against real text; these configs let users reproduce that comparison with the same lengths.
Each row draws seeded uniform ids from the ordinary (non-special) o200k_base tokens whose bytes
are valid UTF-8 on their own, decodes them to text, and re-fits that text to exactly N tokens
(decoded random tokens re-tokenize differently, so the ids themselves are not the prompt).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from speedbench.dataset_builder.registry import BuildContext, BuiltConfig
from speedbench.dataset_builder.throughput.base import Recipe
from speedbench.dataset_builder.throughput.fit import PADDING, encode_body, fit_to_length, o200k_codec, padding_text
from speedbench.schema import DatasetRow, make_question_id
from speedbench.settings import BUILD_DEFAULTS
from speedbench.tokenization.o200k import o200k

CATEGORY = "random"
SUB_CATEGORY = "uniform_o200k"
SOURCE = "synthetic:uniform_o200k"
DRAW_FACTOR = 1.05  # draw a few more ids than N: the re-tokenized text is cut, rarely padded
UNIT = "uniform_o200k:seed={seed}:n={n}:row={row}"


@lru_cache(maxsize=1)
def ordinary_token_ids() -> np.ndarray:
    """Ids of non-special o200k_base tokens that decode to valid UTF-8 by themselves."""
    encoding = o200k()
    special = set(encoding.special_tokens_set)
    ids = []
    for token in range(encoding.n_vocab):
        try:
            piece = encoding.decode_single_token_bytes(token)
        except KeyError:
            continue  # unused ids between the ordinary and special ranges
        if piece.decode("utf-8", errors="ignore").encode() == piece and piece.decode() not in special:
            ids.append(token)
    return np.asarray(ids, dtype=np.int64)


def random_text(seed: int, n_tokens: int, row: int) -> str:
    rng = np.random.default_rng([seed, n_tokens, row])
    ids = ordinary_token_ids()
    drawn = ids[rng.integers(0, len(ids), size=int(n_tokens * DRAW_FACTOR))]
    return o200k().decode(drawn.tolist())


def parse_unit(unit: str) -> tuple[int, int, int]:
    try:
        fields = dict(part.split("=", 1) for part in unit.split(":")[1:])
        return int(fields["seed"]), int(fields["n"]), int(fields["row"])
    except (KeyError, ValueError) as error:
        raise ValueError(f"{unit!r} is not a random-token unit id ({UNIT})") from error


def build_random_row(seed: int, n_tokens: int, row: int, config: str, codec=None) -> DatasetRow:
    codec = codec or o200k_codec()
    text = random_text(seed, n_tokens, row)
    fitted = fit_to_length("", encode_body(codec, text, n_tokens), "", n_tokens, codec, head_tail_tokens=0)
    recipe = Recipe((UNIT.format(seed=seed, n=n_tokens, row=row),), fitted.body_tokens_used, fitted.padding_chars)
    src_id = recipe.to_src_id()
    return DatasetRow(category=CATEGORY, sub_category=SUB_CATEGORY, turns=[fitted.text], source=SOURCE,
                      src_id=src_id, language="und", license="CC0-1.0",
                      question_id=make_question_id(SOURCE, src_id, salt=config))


def render_random(recipe: Recipe, codec=None) -> str:
    codec = codec or o200k_codec()
    seed, n_tokens, row = parse_unit(recipe.units[0])
    tokens = encode_body(codec, random_text(seed, n_tokens, row), n_tokens)
    return codec.decode_prefix(tokens, recipe.body_tokens) + padding_text(recipe.padding_chars)


def build_random(ctx: BuildContext, config: str, n_tokens: int) -> BuiltConfig:
    rows_wanted = ctx.build_options.per_tier or BUILD_DEFAULTS.per_tier
    codec = o200k_codec()
    iterator = range(rows_wanted)
    if ctx.progress:
        from tqdm import tqdm
        iterator = tqdm(iterator, desc=config, unit="prompt", leave=False)
    rows = [build_random_row(ctx.seed, n_tokens, row, config, codec) for row in iterator]
    padded = sum(1 for r in rows if not r.src_id.endswith(",pad=0"))
    stats = {"n_tokens": n_tokens, "rows": len(rows), "padded_rows": padded, "padding": PADDING,
             "ordinary_token_ids": int(len(ordinary_token_ids())), "languages": ["und"]}
    section = "\n".join([
        f"### `{config}`: synthetic control, exactly {n_tokens:,} o200k_base tokens", "",
        f"{len(rows)} prompts of uniformly random `o200k_base` tokens (seeded; drawn from the "
        f"{stats['ordinary_token_ids']:,} ordinary ids that decode to valid UTF-8), decoded to text and "
        f"re-fitted to exactly {n_tokens:,} tokens; `category` = `random`. They are **not** a benchmark of "
        "real workloads: they exist so you can reproduce the synthetic-vs-real comparison (the paper "
        f"measured a 23% throughput overestimate with random tokens) against `throughput_{config.split('_', 1)[1]}`."
        f" Padded rows: {padded}.",
    ])
    return BuiltConfig(name=config, rows=rows, card_section=section, stats=stats, source_files=[])


def make_random_builder(config: str, n_tokens: int):
    def builder(ctx: BuildContext) -> BuiltConfig:
        return build_random(ctx, config, n_tokens)
    builder.__name__ = f"build_{config}"
    return builder
