"""The llama2.c -> HF Llama converter (heads embedded in 32 dims) computes the original model.

References: an independent numpy forward pass of the ORIGINAL checkpoint (llama2.c math, head
size 8, adjacent RoPE pairs from the file's own tables) against a separate numpy forward pass of
the HF Llama math (rotate_half, head_dim 32) over the converted safetensors file read back.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from speedbench.engine.hf_llama import convert, converted_folder, head_index_map, q4_0_round, rope_theta_and_slots
from speedbench.engine.llama2c import read_checkpoint


@pytest.fixture(scope="module")
def checkpoint_path(models_dir):
    return models_dir / "stories260K.bin"


@pytest.fixture(scope="module")
def converted(checkpoint_path, models_dir, tmp_path_factory):
    from safetensors.numpy import load_file

    out = convert(checkpoint_path, models_dir, tmp_path_factory.mktemp("hf") / "stories260K-hf")
    config = json.loads((out / "config.json").read_text())
    return out, load_file(str(out / "model.safetensors")), config


@pytest.fixture(scope="module")
def prompt(models_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(models_dir / "tokenizer.json")).encode("Once upon a time").ids


def test_header_and_frequencies(checkpoint_path):
    ckpt = read_checkpoint(checkpoint_path)
    c = ckpt.config
    assert (c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len) == (64, 172, 5, 8, 4, 512, 512)
    assert c.shared_classifier and c.head_size == 8
    # llama2.c trains with theta 10000: f_j = 10000^(-2j/8).
    np.testing.assert_allclose(ckpt.rope_frequencies(), 10000.0 ** (-np.arange(4) * 2 / 8), rtol=1e-6)


def test_rope_slots_match_original_frequencies():
    freqs = 10000.0 ** (-np.arange(4) * 2 / 8)
    theta, slots = rope_theta_and_slots(freqs, 8, 32)
    assert slots.tolist() == [0, 4, 8, 12]  # computed by hand: s_j = j * 32 / 8
    np.testing.assert_allclose(theta ** (-2 * slots / 32), freqs, rtol=1e-12)
    assert head_index_map(8, 32, slots).tolist() == [0, 16, 4, 20, 8, 24, 12, 28]
    with pytest.raises(ValueError, match="not theta"):
        rope_theta_and_slots(np.array([1.0, 0.3, 0.02, 0.0001]), 8, 32)


def test_config_json(converted):
    _, tensors, config = converted
    assert config["head_dim"] == 32 and config["num_attention_heads"] == 8 and config["num_key_value_heads"] == 4
    assert config["hidden_size"] == 64 and config["max_position_embeddings"] == 4096
    assert config["tie_word_embeddings"] is True and "lm_head.weight" not in tensors
    assert tensors["model.layers.0.self_attn.q_proj.weight"].shape == (8 * 32, 64)
    assert tensors["model.layers.0.self_attn.k_proj.weight"].shape == (4 * 32, 64)
    assert tensors["model.layers.4.self_attn.o_proj.weight"].shape == (64, 8 * 32)


def test_converted_logits_equal_original(converted, checkpoint_path, prompt, np_llama):
    _, tensors, config = converted
    ckpt = read_checkpoint(checkpoint_path)
    tokens = prompt + [int(t) for t in np.random.default_rng(0).integers(3, 512, 60)]
    original = np_llama.llama2c_logits(ckpt.weights, 8, 4, tokens)
    mine = np_llama.hf_llama_logits(tensors, config, tokens)
    assert original.shape == mine.shape == (len(tokens), 512)
    # The file's cos/sin tables are float32, the HF math computes them: differences ~1e-6.
    np.testing.assert_allclose(mine, original, rtol=0, atol=1e-4)


def test_greedy_continuation_equal_and_sensible(converted, checkpoint_path, prompt, np_llama, models_dir):
    from tokenizers import Tokenizer

    _, tensors, config = converted
    ckpt = read_checkpoint(checkpoint_path)
    original = np_llama.greedy(lambda t: np_llama.llama2c_logits(ckpt.weights, 8, 4, t), prompt, 24)
    mine = np_llama.greedy(lambda t: np_llama.hf_llama_logits(tensors, config, t), prompt, 24)
    assert mine == original
    text = Tokenizer.from_file(str(models_dir / "tokenizer.json")).decode(original)
    assert "Lily" in text  # the model card: "... a little girl named Lily."


def test_q4_0_rounding_by_hand():
    block = np.zeros(32, dtype=np.float32)
    block[:4] = [1.0, -0.5, 0.26, -2.0]
    # max-abs value -2.0: d = -2/-8 = 0.25, q = min(15, floor(x/d + 8.5)):
    # 1.0 -> floor(4+8.5)=12 -> 1.0; -0.5 -> floor(-2+8.5)=6 -> -0.5; 0.26 -> floor(1.04+8.5)=9 -> 0.25;
    # -2.0 -> floor(-8+8.5)=0 -> -2.0; 0 -> 8 -> 0.
    np.testing.assert_array_equal(q4_0_round(block[None, :])[0, :4], [1.0, -0.5, 0.25, -2.0])
    # A positive max-abs value clips at q = 15: d = 2/-8 = -0.25, 2.0 -> floor(-8 + 8.5) = 0 -> +2.0,
    # -2.0 -> floor(8 + 8.5) = 16 -> 15 -> -1.75.
    np.testing.assert_array_equal(q4_0_round(np.array([[2.0, -2.0] + [0.0] * 30], np.float32))[0, :2], [2.0, -1.75])
    # The scale is stored as float16: max 0.1 gives d = -0.0125, float16 -0.012496948242 (mantissa
    # 614/1024 of 2^-7), so 0.1 (q = 0) comes back as 8 * 0.012496948242 = 0.099975585938.
    small = np.zeros((1, 32), np.float32)
    small[0, 0] = 0.1
    assert q4_0_round(small)[0, 0] == np.float32(0.0999755859375)
    # Blocks are independent: a row of 64 has two blocks.
    row = np.concatenate([np.full(32, 100.0), np.full(32, 0.25)]).astype(np.float32)[None]
    np.testing.assert_array_equal(q4_0_round(row)[0, 32:], 0.25)
    with pytest.raises(ValueError, match="whole number"):
        q4_0_round(np.ones((2, 40), np.float32))


def test_draft_is_weaker_but_close(checkpoint_path, models_dir, tmp_path, np_llama):
    from safetensors.numpy import load_file

    out = convert(checkpoint_path, models_dir, tmp_path / "draft", draft_q4_0=True)
    draft = load_file(str(out / "model.safetensors"))
    original = load_file(str(convert(checkpoint_path, models_dir, tmp_path / "target") / "model.safetensors"))
    # As in llama.cpp's Q4_0 file: rows of 172 (down_proj) stay float32, the rest is rounded.
    assert np.array_equal(draft["model.layers.0.mlp.down_proj.weight"], original["model.layers.0.mlp.down_proj.weight"])
    assert not np.array_equal(draft["model.layers.0.mlp.up_proj.weight"], original["model.layers.0.mlp.up_proj.weight"])
    assert np.array_equal(draft["model.norm.weight"], original["model.norm.weight"])
    config = json.loads((out / "config.json").read_text())
    ckpt = read_checkpoint(checkpoint_path)
    tokens = [1] + [int(t) for t in np.random.default_rng(1).integers(3, 512, 80)]
    target = np_llama.llama2c_logits(ckpt.weights, 8, 4, tokens).argmax(-1)
    guess = np_llama.hf_llama_logits(draft, config, tokens).argmax(-1)
    agree = float(np.mean(target == guess))
    assert 0.3 < agree < 1.0, agree  # different, yet mostly the same next token


def test_deterministic_and_cached(checkpoint_path, models_dir, tmp_path):
    a = convert(checkpoint_path, models_dir, tmp_path / "a")
    b = convert(checkpoint_path, models_dir, tmp_path / "b")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    first = converted_folder(checkpoint_path, models_dir, tmp_path / "cache")
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert converted_folder(checkpoint_path, models_dir, tmp_path / "cache") == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert (first / "model.safetensors").read_bytes() == (a / "model.safetensors").read_bytes()


def test_bad_checkpoint_is_named(tmp_path, checkpoint_path):
    short = tmp_path / "short.bin"
    short.write_bytes(checkpoint_path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="short.bin"):
        read_checkpoint(short)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="garbage.bin: not a llama2.c checkpoint"):
        read_checkpoint(garbage)
