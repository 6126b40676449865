"""Later-turn prompts equal the whole conversation encoded at once, the engine's answer ids spliced in.

Expected ids come from the `tokenizers` library encoding the whole conversation string at once
(the string written out by hand here, not rendered by the code under test), or are written out
token by token.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from speedbench.tokenization.conversation import encode_turn, encode_turn_exact
from speedbench.tokenization.target import TargetTokenizer

STORY = [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": " there was a cat."},
         {"role": "user", "content": "What next?"}]
STORY_TEXT = "Once upon a time\n\n there was a cat.\n\nWhat next?"  # the fallback: turns joined by a blank line


@pytest.fixture(scope="module")
def stories(models_dir):
    return TargetTokenizer.from_folder(models_dir)


@pytest.fixture(scope="module")
def raw_stories(models_dir):
    return Tokenizer.from_file(str(models_dir / "tokenizer.json"))


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_sentencepiece_later_turn_gains_no_token(stories, raw_stories, mode):
    """The issue's reproduction: the spliced prompt holds '.', '<0x0A>' (no '▁' between them), the
    whole conversation's encoding, with the engine's answer ids (ending in the EOS that stopped it)."""
    whole = raw_stories.encode(STORY_TEXT, add_special_tokens=True)
    engine_answer = raw_stories.encode(" there was a cat.", add_special_tokens=False).ids + [2]  # 2: </s>
    turn = encode_turn_exact(stories, STORY, mode, [engine_answer])
    assert turn.ids == whole.ids
    assert (turn.spliced_answers, turn.reencoded_answers) == (1, 0)
    tokens = [raw_stories.id_to_token(i) for i in turn.ids]
    at = tokens.index(".")
    assert tokens[at:at + 3] == [".", "<0x0A>", "<0x0A>"]


def test_sentencepiece_engine_ids_replace_the_answer_tokens(stories, raw_stories):
    """Ids the answer's text would never encode to are what the prompt carries, in the answer's place."""
    expected_tokens = ["<s>", "▁Once", "▁upon", "▁a", "▁time", "<0x0A>", "<0x0A>", None,
                       "<0x0A>", "<0x0A>", "W", "h", "at", "▁ne", "x", "t", "?"]
    engine_answer = [400, 401, 402]
    expected = []
    for token in expected_tokens:
        expected += engine_answer if token is None else [raw_stories.token_to_id(token)]
    assert encode_turn_exact(stories, STORY, "chat", [engine_answer]).ids == expected


def test_no_ids_is_the_text_encoding(stories, raw_stories):
    assert encode_turn_exact(stories, STORY, "chat", [None]).ids == raw_stories.encode(STORY_TEXT).ids
    assert encode_turn(stories, STORY, "completion") == raw_stories.encode(STORY_TEXT).ids


def test_a_token_across_the_answer_edge_enters_as_text(tmp_path, models_dir, raw_stories):
    """Llama-2 style '[/INST] ' + answer: SentencePiece joins the space to the answer's first word,
    so no token boundary falls at the answer's start; that answer enters as the whole encoding's tokens."""
    (tmp_path / "tokenizer.json").write_bytes((models_dir / "tokenizer.json").read_bytes())
    template = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
                "{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "chat_template": template}))
    tok = TargetTokenizer.from_folder(tmp_path)
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "there"},
                {"role": "user", "content": "Go"}]
    turn = encode_turn_exact(tok, messages, "chat", [[400]])
    assert turn.ids == raw_stories.encode("<s>[INST] Hi [/INST] there</s>[INST] Go [/INST]", add_special_tokens=False).ids
    assert raw_stories.id_to_token(turn.ids[17]) == "▁there"  # one token: the space and the answer's word
    # the engine's id 400 is not in the prompt: a mismatch, counted
    assert (turn.spliced_answers, turn.reencoded_answers, turn.mismatched_answers) == (0, 1, 1)
    # had the engine produced '▁there' itself (its first token after '[/INST]'), the prompt holds its ids
    same = encode_turn_exact(tok, messages, "chat", [[raw_stories.token_to_id("▁there"), 2]])
    assert same.ids == turn.ids
    assert (same.spliced_answers, same.reencoded_answers, same.mismatched_answers) == (1, 0, 0)


def test_an_answer_ending_inside_a_token(bytelevel_folder):
    """Completion mode, byte-level BPE: an answer ending in '\n' is followed by the blank line that
    joins the turns, and '\n\n\n' encodes as 'ĊĊ', 'Ċ': the answer's last character shares a token
    with the template's text. The prompt is the whole encoding (written out by hand: no engine
    tokenization of the answer can be carried exactly) and the mismatch is counted."""
    raw = Tokenizer.from_file(str(bytelevel_folder / "tokenizer.json"))
    tok = TargetTokenizer.from_folder(bytelevel_folder)
    messages = [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": "The dog ran!\n"},
                {"role": "user", "content": "And then?"}]
    text = "Once upon a time\n\nThe dog ran!\n\n\nAnd then?"
    whole = raw.encode(text, add_special_tokens=False)
    assert "ĊĊ" in whole.tokens and whole.offsets[whole.tokens.index("ĊĊ")] == (30, 32)  # across char 31, the edge
    engine = raw.encode("The dog ran!\n", add_special_tokens=False).ids  # ..., '!', 'Ċ'
    turn = encode_turn_exact(tok, messages, "completion", [engine])
    assert turn.ids == whole.ids
    assert (turn.spliced_answers, turn.reencoded_answers, turn.mismatched_answers) == (0, 1, 1)
    # the same answer without its newline ends on a token boundary: spliced, nothing counted
    clean = [dict(m, content=m["content"].rstrip("\n")) for m in messages]
    exact = encode_turn_exact(tok, clean, "completion", [[5, 6, 7]])
    whole_clean = raw.encode("Once upon a time\n\nThe dog ran!\n\nAnd then?", add_special_tokens=False)
    assert whole_clean.tokens[6:10] == ["The", "Ġdog", "Ġran", "!"]  # the answer's tokens, by hand
    assert exact.ids == whole_clean.ids[:6] + [5, 6, 7] + whole_clean.ids[10:]
    assert (exact.spliced_answers, exact.reencoded_answers, exact.mismatched_answers) == (1, 0, 0)


def test_a_stop_token_other_than_eos_is_not_carried(bytelevel_folder):
    """The engine stopped on '<|endoftext|>' (special, not the tokenizer's EOS '<|im_end|>'): its text is
    empty and ChatML writes the turn's end itself, so the prompt is the whole conversation's encoding."""
    raw = Tokenizer.from_file(str(bytelevel_folder / "tokenizer.json"))
    tok = TargetTokenizer.from_folder(bytelevel_folder)
    messages = [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": "Sure thing."},
                {"role": "user", "content": "What next?"}]
    engine = raw.encode("Sure thing.", add_special_tokens=False).ids + [raw.token_to_id("<|endoftext|>")]
    turn = encode_turn_exact(tok, messages, "chat", [engine])
    assert turn.ids == raw.encode(_chatml(messages), add_special_tokens=False).ids
    assert turn.spliced_answers == 1


def test_an_empty_answer(stories, raw_stories):
    """The engine answered with its stop token alone: the conversation holds an empty answer and no id of it."""
    messages = [STORY[0], dict(STORY[1], content=""), STORY[2]]
    turn = encode_turn_exact(stories, messages, "completion", [[2]])
    assert turn.ids == raw_stories.encode("Once upon a time\n\n\n\nWhat next?").ids
    assert (turn.spliced_answers, turn.reencoded_answers, turn.mismatched_answers) == (1, 0, 0)


def _chatml(messages) -> str:
    """ChatML written out by hand (the test's template renders exactly this)."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


def test_bytelevel_two_answers(bytelevel_folder):
    raw = Tokenizer.from_file(str(bytelevel_folder / "tokenizer.json"))
    tok = TargetTokenizer.from_folder(bytelevel_folder)
    messages = [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": "Sure thing."},
                {"role": "user", "content": "What next?"}, {"role": "assistant", "content": " The dog ran!\n"},
                {"role": "user", "content": "And then?"}]
    im_end = raw.token_to_id("<|im_end|>")
    answers = [raw.encode(m["content"], add_special_tokens=False).ids + [im_end] for m in messages[1::2]]
    turn = encode_turn_exact(tok, messages, "chat", answers)
    assert turn.ids == raw.encode(_chatml(messages), add_special_tokens=False).ids
    assert turn.spliced_answers == 2
    swapped = encode_turn_exact(tok, messages, "chat", [[5, 6], None])
    first_end = raw.encode(_chatml(messages[:1]) + "Sure thing.", add_special_tokens=False).ids
    prefix = raw.encode(_chatml(messages[:1]), add_special_tokens=False).ids
    assert swapped.ids[:len(prefix)] == prefix and swapped.ids[len(prefix):len(prefix) + 2] == [5, 6]
    assert len(swapped.ids) == len(turn.ids) - (len(first_end) - len(prefix)) + 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghij .,!?'\n0123", min_size=1, max_size=30), min_size=3, max_size=7))
@example([",\n'", "\n", "b", "bg3jj", ",?0ji!2e"])
def test_bytelevel_property_whole_conversation(bytelevel_folder, contents):
    """Any conversation: with the engine's ids equal to its answers' own encoding, the spliced prompt
    is the whole conversation encoded at once (ChatML's '\\n' and '<|im_end|>' bound every answer).
    An answer that itself starts with '\\n' is the exception: the template's '\\n' before it and its
    own merge into one token ('ĊĊ') across the answer's edge, so it enters as text and is counted as
    mismatched (docs/protocol.md); hypothesis found [',\\n', '\\n', 'b'] as such a case."""
    raw = Tokenizer.from_file(str(bytelevel_folder / "tokenizer.json"))
    tok = TargetTokenizer.from_folder(bytelevel_folder)
    if len(contents) % 2 == 0:
        contents = contents[:-1]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
    answers = [raw.encode(m["content"], add_special_tokens=False).ids for m in messages[1::2]]
    turn = encode_turn_exact(tok, messages, "chat", answers)
    assert turn.ids == raw.encode(_chatml(messages), add_special_tokens=False).ids
    edge_merged = sum(m["content"].startswith("\n") for m in messages[1::2])
    assert turn.spliced_answers + turn.mismatched_answers == len(answers)
    assert turn.mismatched_answers <= edge_merged


def test_template_that_rewrites_answers_is_not_spliced(bytelevel_folder, tmp_path):
    """A template that trims answers renders text the engine ids do not match: the plain encoding."""
    for name in ("tokenizer.json",):
        (tmp_path / name).write_bytes((bytelevel_folder / name).read_bytes())
    template = "{% for m in messages %}{{ m['content'] | trim }}|{% endfor %}"
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "chat_template": template}))
    raw = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " ok "},
                {"role": "user", "content": "More"}]
    turn = encode_turn_exact(TargetTokenizer.from_folder(tmp_path), messages, "chat", [[300]])
    assert turn.ids == raw.encode("Hi|ok|More|", add_special_tokens=False).ids
    # re-encoded, but no mismatch: the rendered text is what an engine given this conversation encodes
    assert (turn.reencoded_answers, turn.mismatched_answers) == (1, 0)
