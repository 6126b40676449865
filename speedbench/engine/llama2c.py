"""Read a llama2.c checkpoint (the legacy version-0 ``.bin`` of Karpathy's llama2.c) into numpy.

Layout (all little-endian): seven int32 ``dim, hidden_dim, n_layers, n_heads, n_kv_heads,
vocab_size, seq_len`` (a negative ``vocab_size`` means the classifier is not shared with the
token embedding), then float32 tensors, each stacked over layers where it has one per layer:
``token_embedding [vocab, dim]``, ``rms_att [L, dim]``, ``wq [L, dim, dim]``,
``wk [L, kv_dim, dim]``, ``wv [L, kv_dim, dim]``, ``wo [L, dim, dim]``, ``rms_ffn [L, dim]``,
``w1 [L, hidden, dim]``, ``w2 [L, dim, hidden]``, ``w3 [L, hidden, dim]``, ``rms_final [dim]``,
``freq_cis_real [seq_len, head_size/2]``, ``freq_cis_imag [seq_len, head_size/2]`` and, when not
shared, ``wcls [vocab, dim]``. Matrices are ``[out, in]`` (``y = W @ x``). RoPE rotates
*adjacent* pairs ``(2j, 2j+1)`` of each head by ``pos * f_j``; the file's cos/sin tables give
``f_j`` exactly as training used them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

_HEADER = np.dtype("<i4")
_FLOAT = np.dtype("<f4")
RMS_NORM_EPS = 1e-5  # llama2.c's RMSNorm epsilon (run.c and model.py)


@dataclass(frozen=True)
class Llama2cConfig:
    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int
    shared_classifier: bool

    @property
    def head_size(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_size


@dataclass(frozen=True)
class Llama2cCheckpoint:
    config: Llama2cConfig
    weights: dict[str, np.ndarray]  # names as in the module docstring; float32

    def rope_frequencies(self) -> np.ndarray:
        """``f_j`` per pair, read back from the checkpoint's own table at position 1."""
        return np.arctan2(self.weights["freq_cis_imag"][1], self.weights["freq_cis_real"][1]).astype(np.float64)


def _shapes(c: Llama2cConfig) -> list[tuple[str, tuple[int, ...]]]:
    L, d, h, kv = c.n_layers, c.dim, c.hidden_dim, c.kv_dim
    shapes = [
        ("token_embedding", (c.vocab_size, d)), ("rms_att", (L, d)), ("wq", (L, d, d)),
        ("wk", (L, kv, d)), ("wv", (L, kv, d)), ("wo", (L, d, d)), ("rms_ffn", (L, d)),
        ("w1", (L, h, d)), ("w2", (L, d, h)), ("w3", (L, h, d)), ("rms_final", (d,)),
        ("freq_cis_real", (c.seq_len, c.head_size // 2)), ("freq_cis_imag", (c.seq_len, c.head_size // 2)),
    ]
    if not c.shared_classifier:
        shapes.append(("wcls", (c.vocab_size, d)))
    return shapes


def read_checkpoint(path: str | Path) -> Llama2cCheckpoint:
    """Parse ``path``; a file of the wrong size or with an impossible header is refused by name."""
    path = Path(path)
    raw = path.read_bytes()
    if len(raw) < 7 * 4:
        raise ValueError(f"{path}: too short for a llama2.c header ({len(raw)} bytes)")
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = (int(v) for v in np.frombuffer(raw, _HEADER, 7))
    if min(dim, hidden, layers, heads, kv_heads, abs(vocab), seq_len) <= 0 or dim % heads or heads % kv_heads \
            or (dim // heads) % 2:
        raise ValueError(f"{path}: not a llama2.c checkpoint (header {dim, hidden, layers, heads, kv_heads, vocab, seq_len})")
    config = Llama2cConfig(dim, hidden, layers, heads, kv_heads, abs(vocab), seq_len, shared_classifier=vocab > 0)
    shapes = _shapes(config)
    expected = 28 + 4 * sum(int(np.prod(s)) for _, s in shapes)
    if len(raw) != expected:
        raise ValueError(f"{path}: {len(raw)} bytes, but header {dim, hidden, layers, heads, kv_heads, vocab, seq_len} "
                         f"implies {expected}")
    weights, offset = {}, 28
    for name, shape in shapes:
        count = int(np.prod(shape))
        weights[name] = np.frombuffer(raw, _FLOAT, count, offset).reshape(shape).astype(np.float32)
        offset += 4 * count
    if config.shared_classifier:
        weights["wcls"] = weights["token_embedding"]
    return Llama2cCheckpoint(config, weights)
