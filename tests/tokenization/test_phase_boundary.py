"""Phase boundary detection from a tokenizer folder (tokenizer.json + chat template), and its overrides.

The tokenizers are built here with the ``tokenizers`` library (word-level vocabularies with added
tokens), with small templates written for these tests in the three styles: Qwen3 (the model opens
``<think>`` itself), DeepSeek-R1 (the generation prompt opens it) and harmony (GPT-OSS channels).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import AddedToken, Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from speedbench.metrics.phases import split_record
from speedbench.tokenization.phase_boundary import (
    PhaseBoundaryError,
    detect_markers,
    parse_boundary_ids,
    resolve_markers,
)
from speedbench.tokenization.target import TargetTokenizer

WORDS = ["[UNK]", "hello", "world", "final", "analysis", "assistant", "user", "</", "think", ">", "<", "so"]

QWEN_STYLE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.role == 'assistant' and '</think>' in m.content %}{{ m.content.split('</think>')[-1] }}"
    "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
QWEN_NO_THINKING = QWEN_STYLE.replace("enable_thinking is defined and not enable_thinking", "true")
R1_STYLE = (
    "{% for m in messages %}{% if m.role == 'user' %}<|User|>{{ m.content }}{% else %}<|Assistant|>"
    "{{ m.content.split('</think>')[-1] }}<|end|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|><think>\n{% endif %}"
)
HARMONY_STYLE = (
    "{% for m in messages %}<|start|>{{ m.role }}{% if m.role == 'assistant' %}<|channel|>final{% endif %}"
    "<|message|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)


def make_tokenizer(folder: Path, template: str | None, specials: list[str], plain: list[str] = ()) -> Path:
    """A word-level tokenizer with ``specials`` as special added tokens and ``plain`` as normal ones."""
    model = WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]")
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in specials])
    tokenizer.add_tokens([AddedToken(t, special=False) for t in plain])  # Qwen3 keeps <think> non-special
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {"eos_token": specials[0] if specials else None}
    if template is not None:
        config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def ids_of(folder: Path, *tokens: str) -> tuple[int, ...]:
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return tuple(tokenizer.token_to_id(t) for t in tokens)


def test_qwen_style_think(tmp_path):
    folder = make_tokenizer(tmp_path / "qwen", QWEN_STYLE, ["<|im_start|>", "<|im_end|>"], ["<think>", "</think>"])
    found = detect_markers(TargetTokenizer.from_folder(folder))
    (close,), (opening,) = ids_of(folder, "</think>"), ids_of(folder, "<think>")
    assert found.markers.boundary_ids == (close,) and found.markers.open_ids == (opening,)
    assert found.markers.source == "template:think" and found.markers.prompt_state == "none"
    assert found.note is None  # one added token: exact


def test_template_that_closes_thinking_in_the_prompt(tmp_path):
    folder = make_tokenizer(tmp_path / "q", QWEN_NO_THINKING, ["<|im_start|>", "<|im_end|>"], ["<think>", "</think>"])
    markers = detect_markers(TargetTokenizer.from_folder(folder)).markers
    assert markers.prompt_state == "closed"
    # the whole output is then the answer, even if the model writes </think> again
    close = markers.boundary_ids[0]
    assert split_record([1, close, 2], [1, 2], markers).chunk_is_answer.tolist() == [True, True]


def test_r1_style_generation_prompt_opens_thinking(tmp_path):
    folder = make_tokenizer(tmp_path / "r1", R1_STYLE, ["<|User|>", "<|Assistant|>", "<|end|>"],
                            ["<think>", "</think>"])
    markers = detect_markers(TargetTokenizer.from_folder(folder)).markers
    assert markers.prompt_state == "open"
    # no </think> in the output: cut before the answer, so all thinking
    split = split_record([1, 2, 3], [1, 2], markers)
    assert split.answer_start == 3 and split.chunk_is_answer.tolist() == [False, False]


def test_harmony_final_channel(tmp_path):
    specials = ["<|start|>", "<|end|>", "<|channel|>", "<|message|>"]
    folder = make_tokenizer(tmp_path / "oss", HARMONY_STYLE, specials)
    found = detect_markers(TargetTokenizer.from_folder(folder))
    channel, message = ids_of(folder, "<|channel|>", "<|message|>")
    final, analysis = ids_of(folder, "final", "analysis")
    assert found.markers.boundary_ids == (channel, final, message)
    assert found.markers.open_ids == (channel, analysis, message)
    assert found.markers.source == "template:harmony" and found.markers.prompt_state == "none"
    assert found.markers.marker_text == "<|channel|>final<|message|>"
    # <|channel|>analysis<|message|> so <|end|><|start|>assistant <|channel|>final<|message|> hello world
    start, end = ids_of(folder, "<|start|>", "<|end|>")
    so, assistant, hello, world = ids_of(folder, "so", "assistant", "hello", "world")
    output = [channel, analysis, message, so, end, start, assistant, channel, final, message, hello, world]
    # chunks at offsets 0, 1, 4, 7, 9, 11: the marker (7..9) spans chunks 3 and 4, and chunk 4
    # (<|message|> hello) holds both phases: it starts in thinking, so it is thinking
    split = split_record(output, [1, 3, 3, 2, 2, 1], found.markers)
    assert split.answer_start == 10 and split.spanning_chunk == 4
    assert split.chunk_is_answer.tolist() == [False, False, False, False, False, True]


def test_marker_that_is_not_one_token_is_matched_by_its_encoding(tmp_path):
    folder = make_tokenizer(tmp_path / "plain", QWEN_STYLE, ["<|im_start|>", "<|im_end|>"])
    found = detect_markers(TargetTokenizer.from_folder(folder))
    assert found.markers.boundary_ids == ids_of(folder, "</", "think", ">")
    assert "not one token" in found.note


def test_think_token_in_the_vocabulary_without_template(tmp_path):
    folder = make_tokenizer(tmp_path / "vocab", None, ["<s>"], ["<think>", "</think>"])
    found = detect_markers(TargetTokenizer.from_folder(folder))
    assert found.markers.source == "tokenizer:think" and found.markers.boundary_ids == ids_of(folder, "</think>")


def test_stories260k_has_no_phase_boundary(models_dir):
    found = resolve_markers(models_dir)
    assert found.markers is None
    assert found.reason.startswith("no phase boundary") and "--phase-boundary-ids" in found.reason


def test_overrides(tmp_path, models_dir):
    assert parse_boundary_ids("151668") == (151668,)
    assert parse_boundary_ids(" 1, 2,3 ") == (1, 2, 3)
    for bad in ("", "a", "1,,2", "-1", "1.5"):
        with pytest.raises(PhaseBoundaryError, match="--phase-boundary-ids"):
            parse_boundary_ids(bad)
    given = resolve_markers(models_dir, boundary_ids="7,8").markers  # a model without markers: ids still work
    assert given.boundary_ids == (7, 8) and given.source == "ids" and given.prompt_state == "none"
    assert resolve_markers(None, boundary_ids="151668", prompt_state_override="open").markers.prompt_state == "open"
    folder = make_tokenizer(tmp_path / "r1", R1_STYLE, ["<|User|>", "<|Assistant|>", "<|end|>"],
                            ["<think>", "</think>"])
    kept = resolve_markers(folder, boundary_ids="3")  # ids replace the boundary; the template's state stays
    assert kept.markers.boundary_ids == (3,) and kept.markers.prompt_state == "open"
    assert resolve_markers(folder, prompt_state_override="none").markers.prompt_state == "none"
    with pytest.raises(PhaseBoundaryError, match="--phase-prompt-state"):
        resolve_markers(folder, prompt_state_override="half")
    missing = resolve_markers(tmp_path / "nothing")
    assert missing.markers is None and "not found" in missing.reason
