"""Convert a llama2.c checkpoint into a Hugging Face Llama folder with wider heads, for vLLM.

vLLM's CPU attention supports head sizes from 32 up; stories260K has head size 8. Each head is
embedded exactly in ``head_dim`` (32) dimensions, so that the converted model computes the same
function:

- RoPE. llama2.c rotates adjacent pairs ``(2j, 2j+1)`` of a head of size ``h`` by ``pos * f_j``
  with ``f_j = theta^(-2j/h)``. HF Llama (``rotate_half``) rotates the pair ``(s, s + D/2)`` of a
  head of size ``D`` by ``pos * theta'^(-2s/D)``. With ``theta' = theta`` and ``s_j = j * D/h``
  the frequencies match exactly: original dimension ``2j`` goes to slot ``s_j`` and ``2j+1`` to
  ``s_j + D/2``; every other slot of q and k is zero, so it adds nothing to any dot product.
- Attention scale. HF divides scores by ``sqrt(D)``, llama2.c by ``sqrt(h)``; q is multiplied by
  ``sqrt(D/h)`` (2 for 8 -> 32, exact in floating point).
- v uses the same slots; o_proj reads them and ignores the zero ones.

``q4_0_round`` gives a weaker draft model: weight matrices rounded the way ggml's Q4_0 does
(blocks of 32 along each row, ``d = x_maxabs / -8`` where ``x_maxabs`` is the value of largest
magnitude, ``q = min(15, floor(x/d + 8.5))``, value ``(q - 8) * fp16(d)``: the scale is stored as
float16). As in llama.cpp's Q4_0 file of stories260K, a matrix whose rows are not a whole number
of blocks (``w2``, rows of 172) stays float32, and norms stay float32.
The output folder is deterministic: same checkpoint and options, byte-identical files.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np

from speedbench.engine.llama2c import RMS_NORM_EPS, Llama2cCheckpoint, read_checkpoint

HEAD_DIM = 32
MAX_POSITION_EMBEDDINGS = 4096
Q4_0_BLOCK = 32
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
_MATRICES = ("token_embedding", "wq", "wk", "wv", "wo", "w1", "w2", "w3")
CONVERTER_VERSION = "2"  # bump when the output of the same inputs changes


def rope_theta_and_slots(frequencies: np.ndarray, head_size: int, head_dim: int) -> tuple[float, np.ndarray]:
    """``theta`` and the rotate_half slot ``s_j`` of each original pair, checked against ``f_j``."""
    if head_dim % head_size:
        raise ValueError(f"head_dim {head_dim} is not a multiple of the checkpoint's head size {head_size}")
    pairs = head_size // 2
    theta = float(frequencies[1]) ** (-head_size / 2.0) if pairs > 1 else 10000.0
    slots = np.arange(pairs) * (head_dim // head_size)
    hf = theta ** (-2.0 * slots / head_dim)
    if not np.allclose(hf, frequencies, rtol=1e-5, atol=0):
        raise ValueError(f"RoPE frequencies {frequencies.tolist()} are not theta^(-2j/{head_size}) for one theta")
    return theta, slots


def head_index_map(head_size: int, head_dim: int, slots: np.ndarray) -> np.ndarray:
    """New position (inside a head of ``head_dim``) of each original dimension of a head."""
    index = np.empty(head_size, dtype=np.int64)
    index[0::2] = slots
    index[1::2] = slots + head_dim // 2
    return index


def _embed_rows(w: np.ndarray, heads: int, head_size: int, head_dim: int, index: np.ndarray) -> np.ndarray:
    """``[heads*head_size, in]`` -> ``[heads*head_dim, in]``, rows placed by ``index``, zeros elsewhere."""
    out = np.zeros((heads, head_dim, w.shape[1]), dtype=np.float32)
    out[:, index, :] = w.reshape(heads, head_size, w.shape[1])
    return out.reshape(heads * head_dim, w.shape[1])


def q4_0_round(w: np.ndarray) -> np.ndarray:
    """Round each row of ``w`` in blocks of 32 as ggml's Q4_0 does, and return the dequantized values."""
    w = np.asarray(w, dtype=np.float32)
    if w.shape[-1] % Q4_0_BLOCK:
        raise ValueError(f"q4_0_round: rows of {w.shape[-1]} are not a whole number of {Q4_0_BLOCK}-blocks")
    out = np.empty_like(w)
    for start in range(0, w.shape[-1], Q4_0_BLOCK):
        block = w[..., start:start + Q4_0_BLOCK]
        pick = np.take_along_axis(block, np.abs(block).argmax(axis=-1)[..., None], axis=-1)
        d = pick / np.float32(-8.0)
        inv = np.divide(np.float32(1.0), d, out=np.zeros_like(d), where=d != 0)
        q = np.minimum(np.float32(15), np.floor(block * inv + np.float32(8.5)))
        # quantized with the float32 scale, stored and dequantized with its float16 rounding
        out[..., start:start + Q4_0_BLOCK] = (q - np.float32(8)) * d.astype(np.float16).astype(np.float32)
    return out


def hf_tensors(ckpt: Llama2cCheckpoint, head_dim: int = HEAD_DIM) -> tuple[dict[str, np.ndarray], float]:
    """The HF Llama state dict (float32) and its ``rope_theta``."""
    c, w = ckpt.config, ckpt.weights
    theta, slots = rope_theta_and_slots(ckpt.rope_frequencies(), c.head_size, head_dim)
    index = head_index_map(c.head_size, head_dim, slots)
    q_scale = np.float32(math.sqrt(head_dim / c.head_size))
    tensors = {"model.embed_tokens.weight": w["token_embedding"], "model.norm.weight": w["rms_final"]}
    for i in range(c.n_layers):
        p = f"model.layers.{i}."
        o = np.zeros((c.dim, c.n_heads, head_dim), dtype=np.float32)
        o[:, :, index] = w["wo"][i].reshape(c.dim, c.n_heads, c.head_size)
        tensors.update({
            p + "input_layernorm.weight": w["rms_att"][i],
            p + "self_attn.q_proj.weight": _embed_rows(w["wq"][i] * q_scale, c.n_heads, c.head_size, head_dim, index),
            p + "self_attn.k_proj.weight": _embed_rows(w["wk"][i], c.n_kv_heads, c.head_size, head_dim, index),
            p + "self_attn.v_proj.weight": _embed_rows(w["wv"][i], c.n_kv_heads, c.head_size, head_dim, index),
            p + "self_attn.o_proj.weight": o.reshape(c.dim, c.n_heads * head_dim),
            p + "post_attention_layernorm.weight": w["rms_ffn"][i],
            p + "mlp.gate_proj.weight": w["w1"][i],
            p + "mlp.up_proj.weight": w["w3"][i],
            p + "mlp.down_proj.weight": w["w2"][i],
        })
    if not c.shared_classifier:
        tensors["lm_head.weight"] = w["wcls"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}, theta


def hf_config(ckpt: Llama2cCheckpoint, theta: float, head_dim: int = HEAD_DIM,
              max_position_embeddings: int = MAX_POSITION_EMBEDDINGS) -> dict:
    c = ckpt.config
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float32",
        "hidden_size": c.dim, "intermediate_size": c.hidden_dim, "num_hidden_layers": c.n_layers,
        "num_attention_heads": c.n_heads, "num_key_value_heads": c.n_kv_heads, "head_dim": head_dim,
        "vocab_size": c.vocab_size, "max_position_embeddings": max_position_embeddings,
        "rms_norm_eps": RMS_NORM_EPS, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        "rope_theta": theta, "rope_parameters": {"rope_type": "default", "rope_theta": theta},
        "tie_word_embeddings": c.shared_classifier, "bos_token_id": 1, "eos_token_id": 2,
    }


def quantized(ckpt: Llama2cCheckpoint) -> Llama2cCheckpoint:
    """The same checkpoint with its weight matrices rounded like Q4_0 (norms and RoPE tables kept)."""
    weights = dict(ckpt.weights)
    names = list(_MATRICES) + ([] if ckpt.config.shared_classifier else ["wcls"])
    for name in names:
        if weights[name].shape[-1] % Q4_0_BLOCK == 0:  # else float32, as llama.cpp does
            weights[name] = q4_0_round(weights[name])
    if ckpt.config.shared_classifier:
        weights["wcls"] = weights["token_embedding"]
    return Llama2cCheckpoint(ckpt.config, weights)


def convert(checkpoint: str | Path, tokenizer_dir: str | Path, out_dir: str | Path, *, draft_q4_0: bool = False,
            head_dim: int = HEAD_DIM, max_position_embeddings: int = MAX_POSITION_EMBEDDINGS) -> Path:
    """Write the HF folder ``out_dir`` (config.json, model.safetensors, tokenizer files) and return it.

    Written into a temporary sibling and renamed, so a folder that exists is complete.
    """
    from safetensors.numpy import save_file

    out_dir, tokenizer_dir = Path(out_dir), Path(tokenizer_dir)
    ckpt = read_checkpoint(checkpoint)
    if draft_q4_0:
        ckpt = quantized(ckpt)
    tensors, theta = hf_tensors(ckpt, head_dim)
    tmp = out_dir.with_name(out_dir.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    config = hf_config(ckpt, theta, head_dim, max_position_embeddings)
    (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    for name in TOKENIZER_FILES:
        source = tokenizer_dir / name
        if not source.is_file():
            raise FileNotFoundError(f"{source}: tokenizer file needed next to the converted model")
        shutil.copyfile(source, tmp / name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
    return out_dir


def converted_folder(checkpoint: str | Path, tokenizer_dir: str | Path, cache_dir: str | Path, *,
                     draft_q4_0: bool = False) -> Path:
    """The converted folder inside ``cache_dir``, made once per checkpoint content and options."""
    checkpoint = Path(checkpoint)
    key = hashlib.sha256(checkpoint.read_bytes()).hexdigest()[:16]
    name = f"{checkpoint.stem}-hd{HEAD_DIM}-{'q4_0-' if draft_q4_0 else ''}{key}-v{CONVERTER_VERSION}"
    out = Path(cache_dir) / name
    if not (out / "model.safetensors").is_file():
        convert(checkpoint, tokenizer_dir, out, draft_q4_0=draft_q4_0)
    return out
