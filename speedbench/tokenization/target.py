"""The target model's tokenizer: its files, its chat template rendered the way the engines render it.

Prompts are tokenized once, outside the engine, so every engine receives the same token ids.
A tokenizer folder must hold ``tokenizer.json`` (the `tokenizers` library format). Chat
templates are rendered by ``transformers``' ``apply_chat_template`` (the library vLLM and SGLang
use themselves; it needs no torch), with the folder's own template (``chat_template.jinja``,
``chat_template.json`` or the ``chat_template`` key of ``tokenizer_config.json``) and the run's
template arguments (``--chat-template-kwargs``, e.g. ``{"enable_thinking": false}``), then encoded
**without** adding special tokens, because the template already writes them (what vLLM's
``/tokenize`` does for messages).

``--tokenizer`` may name a folder or a Hub model id (``ORG/NAME[@REVISION]``): :func:`load_tokenizer`
reads the tokenizer files of the id from the local Hugging Face cache, downloading them only when
asked to (``--online``).

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
records it. Later turns of a conversation: :mod:`speedbench.tokenization.conversation`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json")
# What a Hub id's snapshot must bring for the tokenizer and its template (and nothing heavier).
HUB_TOKENIZER_PATTERNS = (*TOKENIZER_FILES, "special_tokens_map.json", "additional_chat_templates/*")
FALLBACK_TURN_SEPARATOR = "\n\n"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?(@[\w./-]+)?$")


class TokenizerError(ValueError):
    """A tokenizer (or template argument) that cannot be used, with the file or option at fault."""


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


def template_variables(template: str) -> set[str] | None:
    """Names a chat template reads from its context (None when jinja2 alone cannot parse it)."""
    from jinja2 import Environment, meta
    from jinja2.exceptions import TemplateSyntaxError

    try:
        return meta.find_undeclared_variables(Environment(extensions=["jinja2.ext.loopcontrols"]).parse(template))
    except TemplateSyntaxError:  # e.g. transformers' {% generation %} tag
        return None


@dataclass
class TargetTokenizer:
    """Tokenizer of the target model; construct with :meth:`from_folder` or :func:`load_tokenizer`."""

    folder: Path
    chat_template: str | None
    special_tokens: dict[str, str | None]
    sha256: str
    _tokenizer: Any  # tokenizers.Tokenizer
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] | None = None  # the Hub model a --tokenizer id was read from

    @classmethod
    def from_folder(cls, folder: str | Path, chat_template_kwargs: dict[str, Any] | None = None) -> "TargetTokenizer":
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
        made = cls(folder=folder, chat_template=_read_chat_template(folder, config), special_tokens=special,
                   sha256=tokenizer_fingerprint(folder), _tokenizer=tokenizer)
        made.set_chat_template_kwargs(chat_template_kwargs or {})
        return made

    @property
    def has_chat_template(self) -> bool:
        return self.chat_template is not None

    def set_chat_template_kwargs(self, kwargs: dict[str, Any]) -> None:
        """Template arguments for every rendering; a name the template never reads is refused (a
        typo such as ``enable_thinkng`` would otherwise change nothing, silently)."""
        if not isinstance(kwargs, dict):
            raise TokenizerError(f"--chat-template-kwargs: expected a JSON object, got {kwargs!r}")
        if kwargs and self.chat_template is None:
            raise TokenizerError(f"--chat-template-kwargs: {self.folder} has no chat template to pass them to")
        reads = template_variables(self.chat_template) if kwargs else None
        unknown = sorted(set(kwargs) - reads) if reads is not None else []
        if unknown:
            raise TokenizerError(f"--chat-template-kwargs: the chat template of {self.folder} never reads "
                                 f"{', '.join(map(repr, unknown))} (it reads: {', '.join(sorted(reads))})")
        self.chat_template_kwargs = dict(kwargs)

    @property
    def eos_id(self) -> int | None:
        eos = self.special_tokens.get("eos_token")
        return self._tokenizer.token_to_id(eos) if eos else None

    @cached_property
    def special_ids(self) -> frozenset[int]:
        """Ids of the added tokens marked special (BOS, EOS, end-of-turn, ...): text decoding skips them."""
        return frozenset(i for i, token in self._tokenizer.get_added_tokens_decoder().items() if token.special)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without any special tokens added."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_completion(self, text: str) -> list[int]:
        """Completions mode: no template; the tokenizer adds its own special tokens (e.g. BOS)."""
        return self._tokenizer.encode(text, add_special_tokens=True).ids

    def encode_with_offsets(self, text: str, add_special_tokens: bool) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids of ``text`` and each token's character span in it ((0, 0) for added special tokens)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return encoding.ids, [tuple(span) for span in encoding.offsets]

    def decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=True)

    @cached_property
    def _hf(self):
        """The folder loaded by ``transformers`` (only for rendering templates)."""
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # "PyTorch was not found" is expected
        from transformers import AutoTokenizer

        try:
            return AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
        except Exception as error:  # transformers raises OSError, ValueError, KeyError ... by file
            raise TokenizerError(f"{self.folder}: transformers cannot load this tokenizer: {error}") from error

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The chat template applied as text (or the documented fallback when there is none)."""
        if self.chat_template is None:
            return FALLBACK_TURN_SEPARATOR.join(message["content"] for message in messages)
        from jinja2.exceptions import TemplateError

        try:  # the template this object names (the folder's, or an override such as fit-isl's)
            return self._hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                                chat_template=self.chat_template, **self.chat_template_kwargs)
        except TemplateError as error:
            given = f" with --chat-template-kwargs {json.dumps(self.chat_template_kwargs)}" \
                if self.chat_template_kwargs else ""
            raise TokenizerError(f"chat template of {self.folder}{given}: {error}") from error

    def encode_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[int]:
        """Token ids of a conversation, as the target model sees it at generation time."""
        text = self.render_chat(messages, add_generation_prompt=add_generation_prompt)
        if self.chat_template is None:
            return self.encode_completion(text)
        return self.encode(text)


def parse_hub_model_id(text: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` of ``ORG/NAME[@REVISION]`` (or ``NAME``), None for anything else."""
    if not _HUB_ID.match(text) or text.startswith((".", "/")) or ".." in text:
        return None
    repo_id, _, revision = text.partition("@")
    return repo_id, revision or None


def load_tokenizer(spec: str | Path, online: bool = False,
                   chat_template_kwargs: dict[str, Any] | None = None) -> TargetTokenizer:
    """``--tokenizer``: a folder, or a Hub model id read from the local HF cache (fetched when ``online``)."""
    if Path(spec).is_dir():
        return TargetTokenizer.from_folder(spec, chat_template_kwargs)
    parsed = parse_hub_model_id(str(spec))
    if parsed is None:
        raise TokenizerError(f"--tokenizer {spec}: neither a folder nor a Hub model id (ORG/NAME[@REVISION])")
    folder = hub_tokenizer_folder(*parsed, online=online, spec=str(spec))
    tokenizer = TargetTokenizer.from_folder(folder, chat_template_kwargs)
    tokenizer.source = {"repo_id": parsed[0], "revision": parsed[1], "commit": folder.name}
    return tokenizer


def hub_tokenizer_folder(repo_id: str, revision: str | None, online: bool, spec: str) -> Path:
    """The snapshot folder of a Hub model's tokenizer files (the cache only, unless ``online``)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=list(HUB_TOKENIZER_PATTERNS),
                                        local_files_only=not online))
    except LocalEntryNotFoundError as error:
        hint = "" if online else "; pass --online to download it (HF_ENDPOINT, HF_TOKEN)"
        raise TokenizerError(f"--tokenizer {spec}: not in the local Hugging Face cache{hint} ({error})") from None
    except (HfHubHTTPError, OSError, ValueError) as error:
        raise TokenizerError(f"--tokenizer {spec}: cannot be fetched from the Hub: {error}") from None
    if not (folder / "tokenizer.json").is_file():
        raise TokenizerError(f"--tokenizer {spec}: the model has no tokenizer.json (files in {folder}: "
                             f"{', '.join(sorted(p.name for p in folder.iterdir())) or 'none'})")
    return folder
