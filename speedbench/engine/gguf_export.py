"""Write the GGUF files the demo serves from the llama2.c checkpoint and tokenizer (``gguf`` package).

stories260K's origin is a llama2.c checkpoint (``stories260K.bin``) and tokenizer (``tok512.bin``);
llama.cpp serves GGUF. The conversion is a relabelling, no arithmetic for float32:

- tensors: ``token_embedding`` -> ``token_embd``, ``rms_att`` / ``rms_ffn`` -> ``blk.N.attn_norm`` /
  ``ffn_norm``, ``wq wk wv wo`` -> ``attn_q attn_k attn_v attn_output``, ``w1 w2 w3`` ->
  ``ffn_gate ffn_down ffn_up``, ``rms_final`` -> ``output_norm``, the classifier -> ``output``
  (written even when shared with the embedding). llama2.c and llama.cpp's ``llama`` RoPE both
  rotate adjacent pairs, so q and k are not permuted (a Hugging Face checkpoint would need it);
- tokenizer (``tok512.bin``: int32 max token length, then per token float32 score, int32 length,
  bytes): spaces back to sentencepiece's ``▁``, ``"\\n<s>\\n"`` / ``"\\n</s>\\n"`` to ``<s>`` /
  ``</s>``; types unknown (id 0), control (BOS 1, EOS 2), byte (``<0xXX>``), normal;
- drafts: every 2-D weight whose rows are whole 32-blocks quantized to Q4_0 or Q8_0 by ``gguf``'s
  own quantizer (``ffn_down``, rows of 172, stays float32, as llama.cpp's quantizer leaves it);
- ``context_length``: the checkpoint's ``seq_len`` (512), or 16384 for the ``ctx16k`` variants.

The same inputs give byte-identical files (no timestamps, fixed order).
"""
from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import numpy as np

from speedbench.engine.llama2c import RMS_NORM_EPS, Llama2cCheckpoint, read_checkpoint

# file name -> (quantization or None, context length or None for the checkpoint's own, general.name);
# the names are those of the files in ../shared (the ctx16k drafts say "stories260K"), so that the
# files come out byte-identical to them (tests/engine/test_gguf_export.py)
VARIANTS = {
    "stories260K-f32.gguf": (None, None, "stories260K"),
    "stories260K-draft-q4_0.gguf": ("Q4_0", None, "stories260K-draft-q4_0"),
    "stories260K-draft-q8_0.gguf": ("Q8_0", None, "stories260K-draft-q8_0"),
    "stories260K-ctx16k-f32.gguf": (None, 16384, "stories260K"),
    "stories260K-ctx16k-draft-q4_0.gguf": ("Q4_0", 16384, "stories260K"),
    "stories260K-ctx16k-draft-q8_0.gguf": ("Q8_0", 16384, "stories260K"),
}
_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")
_SPECIAL = {"\n<s>\n": "<s>", "\n</s>\n": "</s>"}
_BLOCK = 32


def read_tokenizer(path: str | Path, vocab_size: int) -> tuple[list[str], list[float]]:
    """Tokens (sentencepiece spelling) and scores of a llama2.c ``tokenizer.bin``."""
    path = Path(path)
    raw = path.read_bytes()
    tokens, scores, offset = [], [], 4
    for index in range(vocab_size):
        if offset + 8 > len(raw):
            raise ValueError(f"{path}: ends at token {index} of {vocab_size}")
        score, length = struct.unpack_from("<fi", raw, offset)
        offset += 8
        if length < 0:
            raise ValueError(f"{path}: token {index} has a negative length {length}")
        if offset + length > len(raw):
            raise ValueError(f"{path}: ends inside token {index} of {vocab_size}")
        text = raw[offset:offset + length].decode("utf-8")
        offset += length
        tokens.append(_SPECIAL.get(text, text.replace(" ", "\u2581")))
        scores.append(score)
    if offset != len(raw):
        raise ValueError(f"{path}: {len(raw) - offset} bytes left after {vocab_size} tokens")
    return tokens, scores


def token_types(tokens: list[str]) -> list[int]:
    from gguf import TokenType

    kinds = []
    for index, token in enumerate(tokens):
        if index == 0:
            kinds.append(TokenType.UNKNOWN)
        elif index in (1, 2):
            kinds.append(TokenType.CONTROL)
        elif _BYTE_TOKEN.fullmatch(token):
            kinds.append(TokenType.BYTE)
        else:
            kinds.append(TokenType.NORMAL)
    return [int(k) for k in kinds]


def gguf_tensors(ckpt: Llama2cCheckpoint) -> list[tuple[str, np.ndarray]]:
    """llama.cpp's tensor names and ``[out, in]`` float32 arrays, in llama.cpp's converter order."""
    w = ckpt.weights
    tensors = [("token_embd.weight", w["token_embedding"]), ("output_norm.weight", w["rms_final"]),
               ("output.weight", w["wcls"])]
    for i in range(ckpt.config.n_layers):
        for name, key in (("attn_norm", "rms_att"), ("attn_q", "wq"), ("attn_k", "wk"), ("attn_v", "wv"),
                          ("attn_output", "wo"), ("ffn_norm", "rms_ffn"), ("ffn_gate", "w1"), ("ffn_down", "w2"),
                          ("ffn_up", "w3")):
            tensors.append((f"blk.{i}.{name}.weight", w[key][i]))
    return [(name, np.ascontiguousarray(a, dtype=np.float32)) for name, a in tensors]


def write_gguf(checkpoint: str | Path, tokenizer: str | Path, out: str | Path, *, quantization: str | None = None,
               context_length: int | None = None, name: str = "stories260K") -> Path:
    """One GGUF file; written to a temporary sibling and renamed, so a file that exists is complete."""
    import gguf

    out = Path(out)
    ckpt = read_checkpoint(checkpoint)
    c = ckpt.config
    tokens, scores = read_tokenizer(tokenizer, c.vocab_size)
    qtype = getattr(gguf.GGMLQuantizationType, quantization) if quantization else None
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_name(name)
    writer.add_context_length(context_length or c.seq_len)
    writer.add_embedding_length(c.dim)
    writer.add_feed_forward_length(c.hidden_dim)
    writer.add_block_count(c.n_layers)
    writer.add_head_count(c.n_heads)
    writer.add_head_count_kv(c.n_kv_heads)
    writer.add_rope_dimension_count(c.head_size)
    writer.add_layer_norm_rms_eps(RMS_NORM_EPS)
    writer.add_file_type({None: gguf.LlamaFileType.ALL_F32, "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
                          "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[quantization])
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(token_types(tokens))
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    for tensor_name, array in gguf_tensors(ckpt):
        if qtype is not None and array.ndim == 2 and array.shape[1] % _BLOCK == 0:
            writer.add_tensor(tensor_name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(tensor_name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return out


def write_variants(checkpoint: str | Path, tokenizer: str | Path, folder: str | Path,
                   names: tuple[str, ...] = tuple(VARIANTS)) -> list[Path]:
    """The served GGUF files (``VARIANTS``) into ``folder``; files already there are kept."""
    folder = Path(folder)
    written = []
    for file_name in names:
        quantization, context, name = VARIANTS[file_name]
        if not (folder / file_name).is_file():
            written.append(write_gguf(checkpoint, tokenizer, folder / file_name, quantization=quantization,
                                      context_length=context, name=name))
    return written
