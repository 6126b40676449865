"""The served model files, made from the llama2.c checkpoint and tokenizer, against ../shared's."""
from __future__ import annotations

import hashlib
import json

import pytest

from speedbench.engine.gguf_export import VARIANTS, read_tokenizer, write_gguf, write_variants
from speedbench.engine.llama2c_tokenizer import bpe_merges, write_tokenizer_files

# sha256 of ../shared/models/stories260K's files as its README lists them (written there when the
# files were made with llama.cpp's tools), so the comparison does not rest on this converter alone
README_SHA256 = {
    "stories260K-f32.gguf": "eddb7c7670e455b0d4be94b78345c2899fa10a8f5c039ee7eb8781591e9071b5",
    "stories260K-draft-q4_0.gguf": "cb559ad5e6ede9bbb4c8d0d7597421689882303cf8ea2a3eea6953ce83ace15e",
    "stories260K-draft-q8_0.gguf": "8844658a920073aafc60a1f0dbc05b56af0b79705641e121c3f78248c0d7f24c",
    "stories260K-ctx16k-f32.gguf": "e4a68364ad970c62f8e87f8ce4d7f94b3cfc768d0ef26ba07f85d25038a12fee",
    "stories260K-ctx16k-draft-q4_0.gguf": "f79f50d2527fe59d466f9c97de8ea6411a1b6586ce5731b12ca04e41ccf6636a",
    "stories260K-ctx16k-draft-q8_0.gguf": "a15685c91977173e8e327e470b3f75af05b35bf9ebe8053db75c825e0f08bb5a",
}


@pytest.fixture(scope="module")
def made(models_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("made")
    write_variants(models_dir / "stories260K.bin", models_dir / "tok512.bin", folder)
    write_tokenizer_files(models_dir / "tok512.bin", folder, 512)
    return folder


def test_the_six_gguf_files_are_byte_identical_to_the_shared_ones(made, models_dir):
    assert set(VARIANTS) == set(README_SHA256)
    for name, digest in README_SHA256.items():
        data = (made / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
        assert data == (models_dir / name).read_bytes(), name


def test_tokenizer_files_are_byte_identical_and_encode_as_the_shared_ones(made, models_dir):
    from tokenizers import Tokenizer

    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (made / name).read_bytes() == (models_dir / name).read_bytes(), name
    ours, theirs = Tokenizer.from_file(str(made / "tokenizer.json")), Tokenizer.from_file(
        str(models_dir / "tokenizer.json"))
    text = "Once upon a time, Lily saw a big dog. Ünïcode ✓"
    assert ours.encode(text).ids == theirs.encode(text).ids and ours.encode(text).ids[0] == 1


def test_gguf_metadata_and_a_tensor(made, models_dir):
    import numpy as np
    from gguf import GGUFReader

    from speedbench.engine.llama2c import read_checkpoint

    reader = GGUFReader(str(made / "stories260K-ctx16k-draft-q4_0.gguf"))
    assert reader.fields["llama.context_length"].contents() == 16384
    assert reader.fields["tokenizer.ggml.tokens"].contents()[259] == "\u2581t"
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types["blk.0.ffn_down.weight"] == "F32" and types["blk.0.attn_q.weight"] == "Q4_0"
    f32 = {t.name: np.asarray(t.data) for t in GGUFReader(str(made / "stories260K-f32.gguf")).tensors}
    weights = read_checkpoint(models_dir / "stories260K.bin").weights
    assert np.array_equal(f32["blk.4.attn_k.weight"], weights["wk"][4])
    assert np.array_equal(f32["output.weight"], weights["token_embedding"])  # shared classifier, written


def test_merges_from_scores():
    tokens = ["<unk>", "<s>", "</s>", "a", "b", "c", "ab", "bc", "abc"]
    scores = [0, 0, 0, 0, 0, 0, -1, -2, -3]
    # abc splits two ways: the longer left part first; higher-scoring merged pieces first
    assert bpe_merges(tokens, scores) == [("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")]


def test_a_truncated_tokenizer_is_refused_by_name(models_dir, tmp_path):
    short = tmp_path / "tok.bin"
    short.write_bytes((models_dir / "tok512.bin").read_bytes()[:2000])
    with pytest.raises(ValueError, match=r"tok.bin: ends (at|inside) token \d+ of 512"):
        read_tokenizer(short, 512)
    with pytest.raises(ValueError, match="tok.bin"):
        write_gguf(models_dir / "stories260K.bin", short, tmp_path / "x.gguf")
    assert not list(tmp_path.glob("x.gguf*"))


def test_written_twice_gives_the_same_bytes(models_dir, tmp_path):
    a = write_gguf(models_dir / "stories260K.bin", models_dir / "tok512.bin", tmp_path / "a.gguf", quantization="Q8_0")
    b = write_gguf(models_dir / "stories260K.bin", models_dir / "tok512.bin", tmp_path / "b.gguf", quantization="Q8_0")
    assert a.read_bytes() == b.read_bytes()
    assert json.loads((models_dir / "tokenizer_config.json").read_text())["bos_token"] == "<s>"
