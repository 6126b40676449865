"""Exact-length fitting, reuse statistics, row allocation and the src_id recipe (pure functions, hand-checked)."""
from __future__ import annotations

import pytest

from speedbench.dataset_builder.throughput.base import Recipe, UnitStream, stable_rng
from speedbench.dataset_builder.throughput.bucket import allocate
from speedbench.dataset_builder.throughput.fit import (
    PADDING, Codec, FitError, fit_to_length, o200k_codec, padding_text)
from speedbench.dataset_builder.throughput.reuse import reuse_statistics
from speedbench.tokenization.o200k import o200k

HEAD = "Read the passage.\n\n"
TAIL = "\n\nNow summarise the passage above in three sentences.\n"
BODY = " ".join(f"Sentence number {i} talks about ships, tides and the harbour at dawn." for i in range(400))


@pytest.fixture(scope="module")
def codec():
    return o200k_codec()


@pytest.mark.parametrize("n_tokens", [100, 257, 1000, 2000])
def test_long_body_is_cut_to_exactly_n_tokens_and_instruction_kept(codec, n_tokens):
    fitted = fit_to_length(HEAD, codec.encode(BODY), TAIL, n_tokens, codec)
    assert len(o200k().encode(fitted.text, disallowed_special=())) == n_tokens
    assert fitted.text.startswith(HEAD)
    # Whatever follows the tail can only be padding.
    after = fitted.text.split(TAIL, 1)[1]
    assert after == padding_text(len(after))
    body = fitted.text[len(HEAD):fitted.text.index(TAIL)]
    assert BODY.startswith(body)  # cut, never rewritten


def test_short_body_is_padded_with_the_neutral_suffix(codec):
    fitted = fit_to_length(HEAD, codec.encode("A short passage."), TAIL, 300, codec)
    assert len(o200k().encode_ordinary(fitted.text)) == 300
    assert fitted.padding_chars > 0
    prompt, padding = fitted.text[: -fitted.padding_chars], fitted.text[-fitted.padding_chars:]
    assert prompt == HEAD + "A short passage." + TAIL
    assert padding == padding_text(fitted.padding_chars)
    assert padding.startswith("Answer now please.\nAnswer now please.\n")


def test_instruction_longer_than_n_is_an_error(codec):
    with pytest.raises(FitError):
        fit_to_length(HEAD, [], TAIL * 50, 100, codec)


def test_padding_text_repeats_and_truncates():
    assert padding_text(0) == ""
    assert padding_text(len(PADDING) + 6) == PADDING + "Answer"


def test_fit_works_with_any_codec():
    """A toy codec where every character is a token: the result has exactly N characters."""
    codec = Codec(count=len, encode=lambda text: list(text.encode()),
                  decode_prefix=lambda tokens, k: bytes(tokens[:k]).decode())
    fitted = fit_to_length("<", list(b"x" * 50), ">", 30, codec)
    assert fitted.text == "<" + "x" * 28 + ">"
    padded = fit_to_length("<", list(b"xy"), ">", 10, codec)
    assert padded.text == "<xy>" + "Answer"


def test_reuse_statistics_on_a_constructed_example():
    # Three prompts; unit a (10 tokens) appears three times, b (20) twice, c (5) once.
    prompts = [["a", "b"], ["a", "c"], ["a", "b"]]
    stats = reuse_statistics(prompts, {"a": 10, "b": 20, "c": 5})
    assert stats.total_source_tokens == 10 + 20 + 10 + 5 + 10 + 20  # 75
    assert stats.distinct_source_tokens == 35
    assert stats.distinct_ratio == pytest.approx(35 / 75)
    assert (stats.distinct_units, stats.total_units, stats.max_uses_of_one_unit) == (3, 6, 3)
    no_reuse = reuse_statistics([["a"], ["b"]], {"a": 10, "b": 20})
    assert no_reuse.distinct_ratio == 1.0


def test_allocate_spills_capped_shares_to_the_others():
    assert allocate(512, [None, None]) == [256, 256]
    assert allocate(512, [100, None]) == [100, 412]
    assert allocate(10, [None, 2, 3]) == [5, 2, 3]
    assert allocate(9, [2, 3, None]) == [2, 3, 4]
    assert allocate(10, [3, 3]) == [3, 3]  # not enough anywhere: short
    assert sum(allocate(7, [None, None, None])) == 7


def test_recipe_round_trip_and_errors():
    recipe = Recipe(("pandas==3.1.1:pandas/a.py", "pandas==3.1.1:pandas/b.py"), 1234, 7)
    src_id = recipe.to_src_id()
    assert src_id == "pandas==3.1.1:pandas/a.py|pandas==3.1.1:pandas/b.py@k=1234,pad=7"
    assert Recipe.parse(src_id) == recipe
    with pytest.raises(ValueError):
        Recipe.parse("668825f80a642802bdfeadfa")
    with pytest.raises(ValueError):
        Recipe(("a|b",), 1, 0).to_src_id()


def test_unit_stream_uses_every_unit_before_reusing_and_is_seeded():
    stream = UnitStream(["a", "b", "c", "d"], stable_rng("t", 1))
    first_pass = [stream.draw() for _ in range(4)]
    assert sorted(first_pass) == ["a", "b", "c", "d"] and stream.passes == 1
    stream.draw()
    assert stream.passes == 2
    again = UnitStream(["a", "b", "c", "d"], stable_rng("t", 1))
    assert [again.draw() for _ in range(4)] == first_pass
    finite = UnitStream(["a"], stable_rng("t"), cycle=False)
    assert finite.draw() == "a" and finite.draw() is None
    assert UnitStream(["a"], stable_rng("t")).draw(exclude={"a"}) is None
