"""KV-cache moves (stand-in for sgl-kernel's ``csrc/cpu/kvcache.cpp``)."""
from __future__ import annotations

import ctypes
from typing import Optional

import torch


def store_cache_cpu(k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    indices: torch.Tensor, row_dim: Optional[int] = None) -> None:
    """``k_cache[indices[i]] = k[i]`` and the same for v; rows are ``[heads, head_size]``."""
    if row_dim is not None and row_dim != k.shape[1] * k.shape[2]:
        raise ValueError(f"store_cache_cpu: row_dim {row_dim} != heads x head_size of k {tuple(k.shape)}")
    where = indices.long()
    k_cache[where] = k.to(k_cache.dtype)
    v_cache[where] = v.to(v_cache.dtype)


def copy_all_layer_kv_cache_cpu(data_ptrs: torch.Tensor, strides: torch.Tensor, tgt_loc: torch.Tensor,
                                src_loc: torch.Tensor) -> None:
    """For every K/V buffer (given by base address and bytes per slot row): copy the rows
    ``src_loc`` to ``tgt_loc``. All source rows of a buffer are read before any is written, so
    overlapping source and target sets are safe."""
    if data_ptrs.dtype != torch.uint64 or strides.dtype != torch.int64:
        raise TypeError("copy_all_layer_kv_cache_cpu: data_ptrs must be uint64 and strides int64")
    targets = [int(x) for x in tgt_loc.tolist()]
    sources = [int(x) for x in src_loc.tolist()]
    if len(targets) != len(sources):
        raise ValueError("copy_all_layer_kv_cache_cpu: tgt_loc and src_loc differ in length")
    for base, stride in zip(data_ptrs.tolist(), strides.tolist()):
        staged = [ctypes.string_at(base + row * stride, stride) for row in sources]
        for row, data in zip(targets, staged):
            ctypes.memmove(base + row * stride, data, stride)
