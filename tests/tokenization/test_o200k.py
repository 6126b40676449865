"""The offline o200k_base loader: official vocabulary, hash check, same encoding as tiktoken's own loader."""
from __future__ import annotations

import gzip
import hashlib

import pytest
import tiktoken.load

from speedbench.tokenization.o200k import (
    O200K_SHA256, O200K_SIZE, VocabularyHashError, bundled_vocabulary_path, count_tokens, load_encoding, o200k,
    read_vocabulary)


def test_bundled_file_is_the_official_vocabulary():
    data = gzip.decompress(bundled_vocabulary_path().read_bytes())
    assert len(data) == O200K_SIZE
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256


def test_hello_world_ids_and_counts():
    encoding = o200k()
    assert encoding.encode("hello world") == [24912, 2375]
    assert encoding.n_vocab == 200019
    # Special-token strings count as ordinary text (a prompt may contain them).
    assert count_tokens("<|endoftext|>") > 1
    assert count_tokens("") == 0


def test_ranks_match_tiktoken_own_parser(tmp_path):
    """tiktoken's load_tiktoken_bpe (with its own hash check) on the decompressed file gives the same ranks."""
    plain = tmp_path / "o200k_base.tiktoken"
    plain.write_bytes(gzip.decompress(bundled_vocabulary_path().read_bytes()))
    ranks = tiktoken.load.load_tiktoken_bpe(str(plain), expected_hash=O200K_SHA256)
    assert o200k()._mergeable_ranks == ranks
    # A plain (not gzip) file with the right hash loads too.
    assert load_encoding(plain).encode("Speculative decoding") == o200k().encode("Speculative decoding")


def test_wrong_hash_is_rejected_with_the_file_named(tmp_path):
    data = bytearray(gzip.decompress(bundled_vocabulary_path().read_bytes()))
    data[100] ^= 1  # one flipped bit
    bad = tmp_path / "tampered.tiktoken.gz"
    bad.write_bytes(gzip.compress(bytes(data)))
    with pytest.raises(VocabularyHashError) as error:
        load_encoding(bad)
    assert str(bad) in str(error.value) and O200K_SHA256 in str(error.value)


def test_expected_hash_must_match_even_for_a_valid_file(tmp_path):
    with pytest.raises(VocabularyHashError):
        read_vocabulary(bundled_vocabulary_path(), expected_sha256="0" * 64)
