"""The target model's tokenizer, loaded from its files (no torch, no transformers).

Prompts are tokenized once, outside the engine, so every engine receives the same token ids.
A model folder must hold ``tokenizer.json`` (the `tokenizers` library format); the chat
template comes from ``chat_template.jinja`` or the ``chat_template`` key of
``tokenizer_config.json`` and is rendered with jinja2 the way Hugging Face's
``apply_chat_template`` does (sandboxed, ``trim_blocks``/``lstrip_blocks``, ``raise_exception``,
``strftime_now``, the special-token strings as variables), then encoded **without** adding
special tokens, because the template already writes them.

Modes:
- ``encode(text)``: the text alone, no special tokens.
- ``encode_completion(text)``: completions mode, no template; the tokenizer's own
  post-processor adds its special tokens (for Llama-style tokenizers the BOS), which is what
  a server's ``/tokenize`` with ``add_special: true`` returns.
- ``encode_chat(messages, add_generation_prompt=True)``: the chat template.

Fallback when the model has no chat template (e.g. stories260K, a base model): the message
contents are joined with a blank line (``"\\n\\n"``), with nothing marking roles or the
generation prompt, and encoded in completions mode. So a single-turn row is tokenized exactly
as in completions mode. ``has_chat_template`` tells which path was taken and the run manifest
records it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json")
FALLBACK_TURN_SEPARATOR = "\n\n"


class TokenizerError(ValueError):
    """A tokenizer folder that cannot be used, with the file at fault in the message."""


def tokenizer_fingerprint(folder: str | Path) -> str:
    """sha256 over the tokenizer files present in ``folder`` (names and bytes, in a fixed order)."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def _special_token_string(value: Any) -> str | None:
    # tokenizer_config.json stores special tokens either as strings or as AddedToken dicts.
    if isinstance(value, dict):
        return value.get("content")
    return value


def _read_chat_template(folder: Path, config: dict) -> str | None:
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        return jinja_file.read_text(encoding="utf-8")
    template = config.get("chat_template")
    json_file = folder / "chat_template.json"
    if template is None and json_file.is_file():
        template = json.loads(json_file.read_text(encoding="utf-8")).get("chat_template")
    if isinstance(template, list):
        # Named templates: HF picks "default" unless asked otherwise.
        named = {item.get("name"): item.get("template") for item in template if isinstance(item, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    return template or None


@dataclass
class TargetTokenizer:
    """Tokenizer of the target model; construct with :meth:`from_folder`."""

    folder: Path
    chat_template: str | None
    special_tokens: dict[str, str | None]
    sha256: str
    _tokenizer: Any  # tokenizers.Tokenizer

    @classmethod
    def from_folder(cls, folder: str | Path) -> "TargetTokenizer":
        from tokenizers import Tokenizer

        folder = Path(folder)
        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise TokenizerError(f"{tokenizer_file}: not found (a tokenizer folder needs tokenizer.json)")
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as error:  # tokenizers raises a bare Exception subclass
            raise TokenizerError(f"{tokenizer_file}: cannot be loaded: {error}") from error
        config: dict = {}
        config_file = folder / "tokenizer_config.json"
        if config_file.is_file():
            try:
                config = json.loads(config_file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise TokenizerError(f"{config_file}: invalid JSON: {error}") from error
        special = {
            name: _special_token_string(config.get(name))
            for name in ("bos_token", "eos_token", "unk_token", "pad_token")
        }
        return cls(
            folder=folder,
            chat_template=_read_chat_template(folder, config),
            special_tokens=special,
            sha256=tokenizer_fingerprint(folder),
            _tokenizer=tokenizer,
        )

    @property
    def has_chat_template(self) -> bool:
        return self.chat_template is not None

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without any special tokens added."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_completion(self, text: str) -> list[int]:
        """Completions mode: no template; the tokenizer adds its own special tokens (e.g. BOS)."""
        return self._tokenizer.encode(text, add_special_tokens=True).ids

    def decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=True)

    @cached_property
    def _compiled_template(self):
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        from jinja2.ext import loopcontrols

        def raise_exception(message: str):
            raise TokenizerError(f"chat template of {self.folder}: {message}")

        def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                              sort_keys=sort_keys)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        return env.from_string(self.chat_template)

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The chat template applied as text (or the documented fallback when there is none)."""
        if self.chat_template is None:
            return FALLBACK_TURN_SEPARATOR.join(message["content"] for message in messages)
        variables = {k: v for k, v in self.special_tokens.items() if v is not None}
        return self._compiled_template.render(
            messages=messages, add_generation_prompt=add_generation_prompt, **variables
        )

    def encode_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
        """Token ids of a conversation, as the target model sees it at generation time."""
        text = self.render_chat(messages, add_generation_prompt=add_generation_prompt)
        if self.chat_template is None:
            return self.encode_completion(text)
        return self.encode(text)
