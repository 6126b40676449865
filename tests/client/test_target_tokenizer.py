"""The target tokenizer: plain, completions and chat modes, the fallback, the fingerprint."""
from __future__ import annotations

import json
import shutil

import pytest

from speedbench.tokenization.target import TargetTokenizer, TokenizerError, tokenizer_fingerprint

# A Llama-2 style template; it writes the BOS itself, so encode_chat must not add another.
LLAMA2_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}[INST] {{ message['content'] }} [/INST]"
    "{% else %} {{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %} ASSISTANT:{% endif %}"
)


@pytest.fixture()
def stories(models_dir):
    return TargetTokenizer.from_folder(models_dir)


@pytest.fixture()
def templated_folder(tmp_path, models_dir):
    shutil.copy(models_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    config = {"bos_token": "<s>", "eos_token": {"content": "</s>"}, "chat_template": LLAMA2_TEMPLATE}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp_path


def test_plain_and_completion_modes(stories):
    plain = stories.encode("Once upon a time")
    assert 1 not in plain and 2 not in plain
    assert stories.encode_completion("Once upon a time") == [1] + plain  # BOS = 1 (README of the model)
    assert stories.decode(plain) == "Once upon a time"


def test_fallback_without_chat_template(stories):
    assert not stories.has_chat_template
    single = stories.encode_chat([{"role": "user", "content": "Once upon a time"}])
    assert single == stories.encode_completion("Once upon a time")
    messages = [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                {"role": "user", "content": "C"}]
    assert stories.render_chat(messages) == "A\n\nB\n\nC"


def test_chat_template_rendered_like_hf(templated_folder):
    tok = TargetTokenizer.from_folder(templated_folder)
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"},
                {"role": "user", "content": "Go"}]
    text = tok.render_chat(messages, add_generation_prompt=True)
    assert text == "<s>[INST] Hi [/INST] Yo</s>[INST] Go [/INST] ASSISTANT:"
    assert tok.render_chat(messages[:1], add_generation_prompt=False) == "<s>[INST] Hi [/INST]"
    ids = tok.encode_chat(messages)
    assert ids[0] == 1 and ids[1] != 1  # exactly one BOS: the template's
    assert ids == tok.encode(text)


def test_raise_exception_in_template(templated_folder):
    config = {"chat_template": "{{ raise_exception('only user turns') }}"}
    (templated_folder / "tokenizer_config.json").write_text(json.dumps(config))
    tok = TargetTokenizer.from_folder(templated_folder)
    with pytest.raises(TokenizerError, match="only user turns"):
        tok.encode_chat([{"role": "user", "content": "x"}])


def test_fingerprint_changes_with_files(templated_folder):
    before = tokenizer_fingerprint(templated_folder)
    assert before == TargetTokenizer.from_folder(templated_folder).sha256
    (templated_folder / "tokenizer_config.json").write_text("{}")
    assert tokenizer_fingerprint(templated_folder) != before


def test_missing_tokenizer_json_named(tmp_path):
    with pytest.raises(TokenizerError, match="tokenizer.json"):
        TargetTokenizer.from_folder(tmp_path)
