"""STAND-IN for ``sgl_kernel``'s CPU ops: plain torch, written by speed-bench, never for timing.

SGLang imports ``sgl_kernel`` unconditionally, and no CPU build of it is published on PyPI (the
``sgl-kernel`` / ``sglang-kernel`` wheels hold CUDA builds only). This package takes its place
when ``speedbench serve --engine sglang`` starts SGLang (``speedbench.engine.sglang`` puts this
folder's parent on ``PYTHONPATH``), so that the *unmodified* SGLang server runs on a CPU-only
machine. It replaces kernels only: the scheduler, speculative workers, statistics and HTTP
layer above them are SGLang's own, so the wire format and the acceptance statistics are real.
Timings are not: these ops are Python loops, orders of magnitude slower than the compiled ones.

Each op is our own code, written to the contract of sgl-kernel's ``csrc/cpu/spec.cpp``,
``kvcache.cpp`` and its decode/extend attention kernels (what each computes, with which shapes
and in-place outputs), not to their implementation. The ops SGLang reaches through
``torch.ops.sgl_kernel`` are registered there with ``torch.library``; the others are imported
by name (``from sgl_kernel import ...``). ``convert_weight_packed`` is deliberately absent:
SGLang takes its presence as "this CPU has AMX" and would then call the packed-GEMM kernels,
which are not reproduced (``speedbench.engine.sglang_launch`` says "AMX" for the attention
backend alone).
"""
from __future__ import annotations

import torch

from sgl_kernel._attention import decode_attention_cpu, extend_attention_cpu
from sgl_kernel._kvcache import copy_all_layer_kv_cache_cpu, store_cache_cpu
from sgl_kernel._spec import (
    assign_draft_cache_locs_contiguous_cpu,
    assign_extend_cache_locs_cpu,
    assign_req_to_token_pool_cpu,
    build_draft_decode_metadata_cpu,
    build_tree_kernel_efficient_cpu,
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
    reconstruct_indices_from_tree_mask,
    rotate_input_ids_cpu,
    verify_tree_greedy_cpu,
)

STANDIN = True  # lets a process tell the stand-in from a real sgl_kernel
__version__ = "0.0.0+speedbench-cpu-standin"
reconstruct_indices_from_tree_mask_cpu = reconstruct_indices_from_tree_mask

# Schemas of the ops SGLang calls through torch.ops.sgl_kernel (argument order of its callers).
_SCHEMAS = {
    "decode_attention_cpu": (
        decode_attention_cpu,
        "decode_attention_cpu(Tensor query, Tensor(a!) k_cache, Tensor(b!) v_cache, float k_scale, "
        "float v_scale, Tensor(c!) output, Tensor? key, Tensor? value, Tensor loc, Tensor(d!) attn_logits, "
        "Tensor req_to_token, Tensor req_pool_indices, Tensor seq_lens, float sm_scale, float logit_cap, "
        "bool is_cross_attn, int sliding_window_size, Tensor? encoder_lens, Tensor? sinks) -> ()"),
    "extend_attention_cpu": (
        extend_attention_cpu,
        "extend_attention_cpu(Tensor q_extend, Tensor? k_extend, Tensor? v_extend, Tensor(a!) o_extend, "
        "Tensor k_buffer, Tensor v_buffer, float k_scale, float v_scale, Tensor req_to_token, "
        "Tensor req_pool_indices, Tensor seq_lens, Tensor extend_seq_lens, Tensor extend_start_loc, "
        "int? max_len_extend, float sm_scale, float logit_cap, bool is_cross_attn, int sliding_window_size, "
        "Tensor? encoder_lens, Tensor? sinks, Tensor? tree_mask, bool is_causal) -> ()"),
    "store_cache_cpu": (
        store_cache_cpu,
        "store_cache_cpu(Tensor k, Tensor v, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor indices, "
        "int? row_dim) -> ()"),
}

_library = torch.library.Library("sgl_kernel", "DEF")
for _name, (_function, _schema) in _SCHEMAS.items():
    _library.define(_schema)
    _library.impl(_name, _function, "CPU")

__all__ = [
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "build_draft_decode_metadata_cpu",
    "build_tree_kernel_efficient_cpu",
    "copy_all_layer_kv_cache_cpu",
    "decode_attention_cpu",
    "extend_attention_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "reconstruct_indices_from_tree_mask",
    "reconstruct_indices_from_tree_mask_cpu",
    "rotate_input_ids_cpu",
    "store_cache_cpu",
    "verify_tree_greedy_cpu",
]
