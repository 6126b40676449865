"""Speculative-decoding bookkeeping ops (stand-in for sgl-kernel's ``csrc/cpu/spec.cpp``).

Plain torch and Python loops over the batch: what each op computes follows the contract of
the compiled op (shapes, dtypes, in-place outputs); how is our own. Every output tensor is
written in place, as the callers in SGLang expect.

The draft tree: node 0 of a request is the root (the last verified token), nodes
``1..D-1`` are draft tokens. ``retrive_next_token[b, n]`` is the first child of node ``n``
and ``retrive_next_sibling[b, n]`` its next sibling (``-1``: none); ``retrive_index[b, n]``
is the flat index ``b * D + n`` of a node in the verify batch.
"""
from __future__ import annotations

from typing import Optional

import torch


def _ints(tensor: torch.Tensor) -> list[int]:
    return [int(x) for x in tensor.reshape(-1).tolist()]


def _parent_node(selected: list[int], parents: list[int], node: int, topk: int) -> int | None:
    """Tree node of the parent of draft node ``node`` (0 = root), None when it is not in the tree.

    ``selected[node - 1]`` indexes the draft worker's flattened top-k candidates; dividing by
    ``topk`` gives the candidate that was expanded, whose own index ``parents[...]`` is then
    looked up among the selected nodes.
    """
    expanded = selected[node - 1] // topk
    if expanded == 0:
        return 0
    wanted = parents[expanded]
    for position, candidate in enumerate(selected):
        if candidate == wanted:
            return position + 1
    return None


def build_tree_kernel_efficient_cpu(parent_list: torch.Tensor, selected_index: torch.Tensor,
                                    verified_seq_len: torch.Tensor, tree_mask: torch.Tensor,
                                    positions: torch.Tensor, retrive_index: torch.Tensor,
                                    retrive_next_token: torch.Tensor, retrive_next_sibling: torch.Tensor,
                                    topk: int, depth: int, draft_token_num: int, tree_mask_mode: int) -> None:
    """Tree links, positions and the attention mask of each request's draft tree.

    ``tree_mask_mode`` 1 (QLEN_ONLY, what SGLang's CPU workers use): one ``D x D`` block per
    request, row = query node, column = key node. Mode 0 (FULL_MASK): per request
    ``D x (seq_len + D)`` rows, the prefix columns left as the caller filled them.
    ``retrive_next_token`` / ``retrive_next_sibling`` arrive filled with -1.
    """
    if tree_mask_mode not in (0, 1):
        raise NotImplementedError(f"build_tree_kernel_efficient_cpu: tree_mask_mode {tree_mask_mode} "
                                  "(QLEN_ONLY_BITPACKING) has no CPU producer")
    size = draft_token_num
    seq_lens = _ints(verified_seq_len)
    flat_mask = tree_mask.view(-1)
    flat_pos = positions.view(-1)
    mask_start = 0
    for b, seq_len in enumerate(seq_lens):
        selected = _ints(selected_index[b])
        parents = _ints(parent_list[b])
        parent_of = {node: _parent_node(selected, parents, node, topk) for node in range(1, size)}
        retrive_index[b] = torch.arange(b * size, (b + 1) * size, dtype=retrive_index.dtype)
        # Children are linked in increasing node order: walking down prepends each child.
        for node in range(size - 1, 0, -1):
            parent = parent_of[node]
            if parent is None:
                continue
            first = int(retrive_next_token[b, parent])
            if first != -1:
                retrive_next_sibling[b, node] = first
            retrive_next_token[b, parent] = node
        columns = size if tree_mask_mode == 1 else seq_len + size
        prefix = 0 if tree_mask_mode == 1 else seq_len
        for node in range(size):
            row = mask_start + node * columns + prefix
            flat_mask[row:row + size] = False
            flat_mask[row] = True  # every node sees the root
            ancestor, depth_of_node = node, 0
            while ancestor not in (0, None):
                flat_mask[row + ancestor] = True
                depth_of_node += 1
                ancestor = parent_of[ancestor]
            flat_pos[b * size + node] = seq_len + depth_of_node
        mask_start += size * columns


def verify_tree_greedy_cpu(predicts: torch.Tensor, accept_index: torch.Tensor, accept_token_num: torch.Tensor,
                           candidates: torch.Tensor, retrive_index: torch.Tensor, retrive_next_token: torch.Tensor,
                           retrive_next_sibling: torch.Tensor, target_predict: torch.Tensor) -> None:
    """Greedy verification: from the root, follow the child whose draft token equals the target's
    argmax at the current node, as deep as it goes.

    ``accept_index[b]`` receives the flat indices of the root and each accepted node (the rest
    is left as the caller filled it, -1); ``accept_token_num[b]`` the accepted drafts (the bonus
    token not counted); ``predicts`` (flat) the target's token at each node on the path, the
    last one being the bonus token.
    """
    batch, size = candidates.shape
    steps = accept_index.shape[1]
    targets = _ints(target_predict)
    for b in range(batch):
        nodes_index = _ints(retrive_index[b])
        tokens = _ints(candidates[b])
        first_child = _ints(retrive_next_token[b])
        next_sibling = _ints(retrive_next_sibling[b])
        last = nodes_index[0]
        accept_index[b, 0] = last
        accepted, node = 0, 0
        for _ in range(1, steps):
            child = first_child[node]
            while child != -1 and tokens[child] != targets[last]:
                child = next_sibling[child]
            if child == -1:
                break
            predicts.view(-1)[last] = targets[last]
            accepted += 1
            accept_index[b, accepted] = nodes_index[child]
            last, node = nodes_index[child], child
        accept_token_num[b] = accepted
        predicts.view(-1)[last] = targets[last]


def reconstruct_indices_from_tree_mask(tree_mask: torch.Tensor, verified_seq_len: torch.Tensor,
                                       positions: torch.Tensor, retrive_index: torch.Tensor,
                                       retrive_next_token: torch.Tensor, retrive_next_sibling: torch.Tensor,
                                       batch_size: int, draft_token_num: int) -> None:
    """Tree links from an n-gram draft's ``D x D`` ancestor mask (QLEN layout, row = node).

    A node's ancestors are the earlier columns set in its row; its parent is the nearest one,
    its depth their count; its first child is the first later node whose row marks it; its
    next sibling the first later node with the same parent.
    """
    size = draft_token_num
    seq_lens = _ints(verified_seq_len)
    masks = tree_mask.view(batch_size, size, size)
    for b in range(batch_size):
        rows = masks[b].tolist()
        parent = []
        for node in range(size):
            ancestors = [j for j in range(node) if rows[node][j]]
            parent.append(ancestors[-1] if ancestors else -1)
            retrive_index[b, node] = b * size + node
            positions.view(-1)[b * size + node] = seq_lens[b] + len(ancestors)
        for node in range(size):
            child = next((i for i in range(node + 1, size) if parent[i] == node), -1)
            sibling = -1
            if parent[node] != -1:
                sibling = next((i for i in range(node + 1, size) if parent[i] == parent[node]), -1)
            retrive_next_token[b, node] = child
            retrive_next_sibling[b, node] = sibling


def assign_req_to_token_pool_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """``req_to_token[req, start:end]`` = the next ``end - start`` entries of ``out_cache_loc``."""
    taken = 0
    for req, start, end in zip(_ints(req_pool_indices), _ints(start_offset), _ints(end_offset)):
        req_to_token[req, start:end] = out_cache_loc[taken:taken + end - start].to(req_to_token.dtype)
        taken += end - start


def assign_extend_cache_locs_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """The inverse gather: ``out_cache_loc`` = each request's ``req_to_token[req, start:end]``, in turn."""
    written = 0
    for req, start, end in zip(_ints(req_pool_indices), _ints(start_offset), _ints(end_offset)):
        out_cache_loc[written:written + end - start] = req_to_token[req, start:end].to(out_cache_loc.dtype)
        written += end - start


def assign_draft_cache_locs_contiguous_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                           seq_lens: torch.Tensor, out_cache_loc: torch.Tensor,
                                           pool_len: int, topk: int, num_steps: int) -> None:
    """Each request's ``topk * num_steps`` draft slots, reserved right after its sequence."""
    width = topk * num_steps
    for i, (req, seq_len) in enumerate(zip(_ints(req_pool_indices), _ints(seq_lens))):
        out_cache_loc[i * width:(i + 1) * width] = req_to_token[req, seq_len:seq_len + width].to(out_cache_loc.dtype)


def build_draft_decode_metadata_cpu(req_to_token: torch.Tensor, req_pool_indices: torch.Tensor,
                                    seq_lens: torch.Tensor, topk: int, num_steps: int, pool_len: int) -> torch.Tensor:
    """A ``req_to_token`` for multi-step draft decoding: row ``b * topk + k`` is request b's
    prefix followed by candidate k's ``num_steps`` draft slots (laid out at ``seq_len + k * num_steps``).
    Entries past ``seq_len + num_steps`` are not meaningful (zero here)."""
    rows = torch.zeros((req_pool_indices.numel() * topk, pool_len), dtype=req_to_token.dtype)
    for b, (req, seq_len) in enumerate(zip(_ints(req_pool_indices), _ints(seq_lens))):
        source = req_to_token[req]
        for k in range(topk):
            row = rows[b * topk + k]
            row[:seq_len] = source[:seq_len]
            start = seq_len + k * num_steps
            row[seq_len:seq_len + num_steps] = source[start:start + num_steps]
    return rows


def fill_bonus_tokens_cpu(accept_tokens: torch.Tensor, accept_lens: torch.Tensor, bonus_tokens: torch.Tensor,
                          accept_stride: int) -> None:
    """``bonus_tokens[b]`` = the last accepted token of request b (``accept_lens`` counts it)."""
    flat = accept_tokens.reshape(-1)
    for b, length in enumerate(_ints(accept_lens)):
        bonus_tokens[b] = flat[accept_stride * b + length - 1]


def fill_accept_out_cache_loc_cpu(accept_index: torch.Tensor, out_cache_loc: torch.Tensor,
                                  accept_out_cache_loc: torch.Tensor, size: Optional[int] = None) -> None:
    """The KV slots of the accepted tokens, compacted in order (entries of -1 are skipped)."""
    indices = _ints(accept_index)[: size if size is not None else None]
    kept = [i for i in indices if i > -1]
    if kept:
        accept_out_cache_loc[:len(kept)] = out_cache_loc[torch.tensor(kept, dtype=torch.long)]


def rotate_input_ids_cpu(input_ids: torch.Tensor, extend_start_loc: torch.Tensor, extend_seq_lens: torch.Tensor,
                         topk_index: torch.Tensor, select_index: Optional[torch.Tensor] = None) -> None:
    """Shift each request's extend segment left by one and put its new draft token at the end
    (or at ``select_index[b]``)."""
    new_tokens = _ints(topk_index)
    chosen = _ints(select_index) if select_index is not None else None
    for b, (start, length) in enumerate(zip(_ints(extend_start_loc), _ints(extend_seq_lens))):
        if length > 1:
            input_ids[start:start + length - 1] = input_ids[start + 1:start + length].clone()
        if length > 0:
            input_ids[chosen[b] if chosen is not None else start + length - 1] = new_tokens[b]
