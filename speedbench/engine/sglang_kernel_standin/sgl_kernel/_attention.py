"""Paged decode and extend attention (stand-in for sgl-kernel's ``decode.cpp`` / ``extend.cpp``).

One request at a time, in float32: keys and values are gathered from the paged KV cache
through ``req_to_token[req_pool_indices[b], :seq_len]``; grouped-query heads share a KV head
(query head ``h`` reads KV head ``h // (heads / kv_heads)``). Scores are scaled by
``sm_scale``, soft-capped as ``cap * tanh(s / cap)`` when ``logit_cap > 0``, and an attention
sink (one logit per head) joins the softmax's denominator when given. Encoder-decoder
(cross) attention is not reproduced: the models served here never use it.
"""
from __future__ import annotations

from typing import Optional

import torch


def _check_supported(is_cross_attn: bool) -> None:
    if is_cross_attn:
        raise NotImplementedError("sgl_kernel stand-in: cross-attention is not reproduced")


def _attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, visible: Optional[torch.Tensor],
            sm_scale: float, logit_cap: float, sinks: Optional[torch.Tensor]) -> torch.Tensor:
    """q ``[m, H, d]``, keys ``[n, Hkv, d]``, values ``[n, Hkv, dv]``, visible ``[m, n]`` bool
    (None: all) -> ``[m, H, dv]`` in float32."""
    heads, kv_heads = q.shape[1], keys.shape[1]
    if heads % kv_heads:
        raise ValueError(f"sgl_kernel stand-in: {heads} query heads do not group over {kv_heads} KV heads")
    group = heads // kv_heads
    keys = keys.float().repeat_interleave(group, dim=1)
    values = values.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("mhd,nhd->hmn", q.float(), keys) * sm_scale
    if logit_cap > 0:
        scores = logit_cap * torch.tanh(scores / logit_cap)
    if visible is not None:
        scores = scores.masked_fill(~visible.unsqueeze(0), float("-inf"))
    if sinks is not None:
        sink = sinks.float().view(heads, 1, 1).expand(heads, scores.shape[1], 1)
        weights = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    else:
        weights = torch.softmax(scores, dim=-1)
    return torch.einsum("hmn,nhd->mhd", weights, values)


def _window(positions_q: torch.Tensor, positions_k: torch.Tensor, window: int) -> Optional[torch.Tensor]:
    """Keys at most ``window - 1`` positions behind the query (``window`` <= 0: no window)."""
    if window <= 0:
        return None
    return (positions_q.unsqueeze(1) - positions_k.unsqueeze(0)) < window


def decode_attention_cpu(query: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_scale: float,
                         v_scale: float, output: torch.Tensor, key: Optional[torch.Tensor],
                         value: Optional[torch.Tensor], loc: torch.Tensor, attn_logits: torch.Tensor,
                         req_to_token: torch.Tensor, req_pool_indices: torch.Tensor, seq_lens: torch.Tensor,
                         sm_scale: float, logit_cap: float, is_cross_attn: bool, sliding_window_size: int,
                         encoder_lens: Optional[torch.Tensor], sinks: Optional[torch.Tensor]) -> None:
    """One new query token per request. ``key``/``value`` (when given) are first written to the
    cache at ``loc``; then each request attends over its ``seq_len`` cached tokens, the new one
    included. ``attn_logits`` is the compiled kernel's scratch space and is not used."""
    _check_supported(is_cross_attn)
    if key is not None and value is not None:
        where = loc.long()
        k_cache[where] = key.to(k_cache.dtype)
        v_cache[where] = value.to(v_cache.dtype)
    for b in range(query.shape[0]):
        seq_len = int(seq_lens[b])
        slots = req_to_token[int(req_pool_indices[b]), :seq_len].long()
        positions = torch.arange(seq_len)
        visible = _window(positions[-1:], positions, sliding_window_size)
        out = _attend(query[b:b + 1], k_cache[slots] * k_scale, v_cache[slots] * v_scale, visible,
                      sm_scale, logit_cap, sinks)
        output[b] = out[0].to(output.dtype)


def _extend_visibility(tree_mask: Optional[torch.Tensor], qlen_layout: bool, mask_start: int, prefix: int,
                       extend: int, is_causal: bool) -> tuple[Optional[torch.Tensor], int]:
    """Which of the ``prefix + extend`` keys each extend query sees, and where the next request's
    mask block starts. A tree mask comes as one ``extend x extend`` block per request (QLEN
    layout, what SGLang's CPU workers build) or ``extend x (prefix + extend)`` (full layout)."""
    if tree_mask is None:
        if not is_causal:
            return None, mask_start
        causal = torch.arange(extend).unsqueeze(0) <= torch.arange(extend).unsqueeze(1)
        return torch.cat([torch.ones(extend, prefix, dtype=torch.bool), causal], dim=1), mask_start
    flat = tree_mask.view(-1)
    if qlen_layout:
        block = flat[mask_start:mask_start + extend * extend].view(extend, extend).bool()
        return torch.cat([torch.ones(extend, prefix, dtype=torch.bool), block], dim=1), mask_start + extend * extend
    width = prefix + extend
    block = flat[mask_start:mask_start + extend * width].view(extend, width).bool()
    return block, mask_start + extend * width


def extend_attention_cpu(q_extend: torch.Tensor, k_extend: Optional[torch.Tensor], v_extend: Optional[torch.Tensor],
                         o_extend: torch.Tensor, k_buffer: torch.Tensor, v_buffer: torch.Tensor, k_scale: float,
                         v_scale: float, req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
                         seq_lens: torch.Tensor, extend_seq_lens: torch.Tensor, extend_start_loc: torch.Tensor,
                         max_len_extend: Optional[int], sm_scale: float, logit_cap: float, is_cross_attn: bool,
                         sliding_window_size: int, encoder_lens: Optional[torch.Tensor],
                         sinks: Optional[torch.Tensor], tree_mask: Optional[torch.Tensor], is_causal: bool) -> None:
    """Several new tokens per request (prefill, or the verify pass over a draft).

    Each request's ``extend_seq_lens[b]`` queries start at ``extend_start_loc[b]``; they see the
    ``seq_len - extend`` cached prefix tokens, and the extend tokens by causal order or, for a
    draft tree, by ``tree_mask``. Extend keys come from ``k_extend``/``v_extend`` (from the cache
    when those are None).
    """
    _check_supported(is_cross_attn)
    extends = [int(x) for x in extend_seq_lens.tolist()]
    lens = [int(x) for x in seq_lens.tolist()]
    # The mask's size tells its layout: sum(extend^2) for QLEN, sum(extend * seq_len) for full.
    qlen_layout = tree_mask is not None and tree_mask.numel() == sum(e * e for e in extends)
    mask_start = 0
    for b, (seq_len, extend) in enumerate(zip(lens, extends)):
        if extend == 0:
            continue
        start, prefix = int(extend_start_loc[b]), seq_len - extend
        slots = req_to_token[int(req_pool_indices[b]), :seq_len].long()
        keys, values = k_buffer[slots] * k_scale, v_buffer[slots] * v_scale
        if k_extend is not None and v_extend is not None:
            keys = torch.cat([keys[:prefix], k_extend[start:start + extend].to(keys.dtype)])
            values = torch.cat([values[:prefix], v_extend[start:start + extend].to(values.dtype)])
        visible, mask_start = _extend_visibility(tree_mask, qlen_layout, mask_start, prefix, extend, is_causal)
        in_window = _window(torch.arange(prefix, seq_len), torch.arange(seq_len), sliding_window_size)
        if in_window is not None:
            visible = in_window if visible is None else visible & in_window
        out = _attend(q_extend[start:start + extend], keys, values, visible, sm_scale, logit_cap, sinks)
        o_extend[start:start + extend] = out.to(o_extend.dtype)
