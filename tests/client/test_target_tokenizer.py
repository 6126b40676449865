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
    eos = {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": False, "rstrip": False,
           "single_word": False, "special": True}  # the AddedToken form transformers writes
    config = {"bos_token": "<s>", "eos_token": eos, "chat_template": LLAMA2_TEMPLATE}
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


# A template with a thinking switch, written for these tests (the shape of Qwen3's).
THINKING_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% if enable_thinking is defined and not enable_thinking %}"
    "<think></think>{% endif %}{% endif %}"
    "{% if reasoning_effort is defined and reasoning_effort not in ['low', 'high'] %}"
    "{{ raise_exception('reasoning_effort must be low or high') }}{% endif %}"
)


def _thinking_folder(folder, models_dir):
    shutil.copy(models_dir / "tokenizer.json", folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>", "chat_template": THINKING_TEMPLATE}))
    return folder


def test_chat_template_kwargs_reach_the_template(tmp_path, models_dir):
    folder = _thinking_folder(tmp_path, models_dir)
    messages = [{"role": "user", "content": "Hi"}]
    assert TargetTokenizer.from_folder(folder).render_chat(messages) == "<|user|>Hi\n<|assistant|>"
    off = TargetTokenizer.from_folder(folder, {"enable_thinking": False})
    assert off.render_chat(messages) == "<|user|>Hi\n<|assistant|><think></think>"
    assert off.encode_chat(messages) == off.encode("<|user|>Hi\n<|assistant|><think></think>")


def test_bad_chat_template_kwargs_name_the_option(tmp_path, models_dir):
    folder = _thinking_folder(tmp_path, models_dir)
    with pytest.raises(TokenizerError, match=r"--chat-template-kwargs: the chat template .* never reads 'enable_thinkng'"):
        TargetTokenizer.from_folder(folder, {"enable_thinkng": False})
    rejected = TargetTokenizer.from_folder(folder, {"reasoning_effort": "extreme"})
    with pytest.raises(TokenizerError, match=r"--chat-template-kwargs \{\"reasoning_effort\": \"extreme\"\}: "
                                             r"reasoning_effort must be low or high"):
        rejected.encode_chat([{"role": "user", "content": "x"}])
    with pytest.raises(TokenizerError, match="has no chat template"):
        TargetTokenizer.from_folder(models_dir, {"enable_thinking": False})


def _hub_cache(root, repo_id, files, commit="0123456789abcdef0123456789abcdef01234567"):
    """The Hugging Face cache layout (models--ORG--NAME/refs/main, snapshots/<commit>/...), written by hand."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name, source in files.items():
        shutil.copy(source, snapshot / name)
    return commit


def test_tokenizer_as_a_hub_id_from_the_cache(tmp_path, models_dir, monkeypatch):
    import huggingface_hub.constants

    from speedbench.tokenization.target import load_tokenizer

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    commit = _hub_cache(tmp_path, "karpathy/stories260K", {"tokenizer.json": models_dir / "tokenizer.json",
                                                           "tokenizer_config.json": models_dir / "tokenizer_config.json"})
    tok = load_tokenizer("karpathy/stories260K")
    assert tok.encode_completion("Once upon a time") == [1, 403, 407, 261, 378]
    assert tok.sha256 == tokenizer_fingerprint(models_dir)
    assert tok.source == {"repo_id": "karpathy/stories260K", "revision": None, "commit": commit}
    with pytest.raises(TokenizerError, match=r"--tokenizer someone/missing: not in the local Hugging Face cache; "
                                             r"pass --online"):
        load_tokenizer("someone/missing")
    _hub_cache(tmp_path, "someone/weights-only", {"config.json": models_dir / "tokenizer_config.json"})
    with pytest.raises(TokenizerError, match=r"--tokenizer someone/weights-only: the model has no tokenizer.json"):
        load_tokenizer("someone/weights-only")
    with pytest.raises(TokenizerError, match="neither a folder nor a Hub model id"):
        load_tokenizer(str(tmp_path / "no" / "such" / "folder"))
