"""Two independent numpy forward passes, used as references by the converter tests.

``llama2c_logits`` follows llama2.c's ``run.c`` on the ORIGINAL checkpoint: adjacent RoPE pairs
rotated with the checkpoint's own cos/sin tables, head size 8, scores divided by sqrt(8).
``hf_llama_logits`` follows Hugging Face's ``LlamaForCausalLM`` math on a converted state dict and
its config.json: ``rotate_half`` RoPE with ``inv_freq = theta^(-2i/D)``, ``head_dim`` from the
config, scores divided by sqrt(head_dim), grouped-query attention. Neither imports the converter.
"""
from __future__ import annotations

import numpy as np


def _rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """q [H, T, d], k/v [H, T, d] (already repeated for GQA) -> [H, T, d]."""
    scores = q @ k.transpose(0, 2, 1) * scale
    t = q.shape[1]
    scores = np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (scores / scores.sum(axis=-1, keepdims=True)) @ v


def llama2c_logits(weights: dict, n_heads: int, n_kv_heads: int, tokens: list[int]) -> np.ndarray:
    """[T, vocab] logits of the original llama2.c model, float64."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    x = w["token_embedding"][tokens]
    t, dim = x.shape
    hs = dim // n_heads
    cos, sin = w["freq_cis_real"][:t], w["freq_cis_imag"][:t]  # [T, hs/2]

    def rope(m: np.ndarray) -> np.ndarray:  # m [T, heads, hs], pairs (2j, 2j+1)
        a, b = m[..., 0::2], m[..., 1::2]
        out = np.empty_like(m)
        out[..., 0::2] = a * cos[:, None, :] - b * sin[:, None, :]
        out[..., 1::2] = a * sin[:, None, :] + b * cos[:, None, :]
        return out

    for layer in range(w["wq"].shape[0]):
        h = _rmsnorm(x, w["rms_att"][layer], 1e-5)
        q = rope((h @ w["wq"][layer].T).reshape(t, n_heads, hs))
        k = rope((h @ w["wk"][layer].T).reshape(t, n_kv_heads, hs))
        v = (h @ w["wv"][layer].T).reshape(t, n_kv_heads, hs)
        rep = n_heads // n_kv_heads
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        att = _causal_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), 1 / np.sqrt(hs))
        x = x + att.transpose(1, 0, 2).reshape(t, dim) @ w["wo"][layer].T
        h = _rmsnorm(x, w["rms_ffn"][layer], 1e-5)
        x = x + (_silu(h @ w["w1"][layer].T) * (h @ w["w3"][layer].T)) @ w["w2"][layer].T
    x = _rmsnorm(x, w["rms_final"], 1e-5)
    return x @ w["wcls"].T


def hf_llama_logits(tensors: dict, config: dict, tokens: list[int]) -> np.ndarray:
    """[T, vocab] logits of a HF Llama state dict, float64."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}
    n_heads, n_kv = config["num_attention_heads"], config["num_key_value_heads"]
    d, eps = config["head_dim"], config["rms_norm_eps"]
    x = w["model.embed_tokens.weight"][tokens]
    t = x.shape[0]
    inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, d, 2) / d))
    angles = np.arange(t)[:, None] * inv_freq[None, :]
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)[:, None, :]  # [T, 1, D]
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)[:, None, :]

    def rope(m: np.ndarray) -> np.ndarray:  # rotate_half
        rotated = np.concatenate([-m[..., d // 2:], m[..., :d // 2]], axis=-1)
        return m * cos + rotated * sin

    layer = 0
    while f"model.layers.{layer}.input_layernorm.weight" in w:
        p = f"model.layers.{layer}."
        h = _rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        q = rope((h @ w[p + "self_attn.q_proj.weight"].T).reshape(t, n_heads, d))
        k = rope((h @ w[p + "self_attn.k_proj.weight"].T).reshape(t, n_kv, d))
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(t, n_kv, d)
        k, v = np.repeat(k, n_heads // n_kv, axis=1), np.repeat(v, n_heads // n_kv, axis=1)
        att = _causal_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), 1 / np.sqrt(d))
        x = x + att.transpose(1, 0, 2).reshape(t, n_heads * d) @ w[p + "self_attn.o_proj.weight"].T
        h = _rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (_silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        layer += 1
    x = _rmsnorm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if config["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def greedy(logits_fn, prompt: list[int], steps: int) -> list[int]:
    """Greedy continuation: ``logits_fn(tokens)`` gives [T, vocab]; recomputed each step (tiny model)."""
    tokens = list(prompt)
    for _ in range(steps):
        tokens.append(int(np.argmax(logits_fn(tokens)[-1])))
    return tokens[len(prompt):]
