"""``tokenizer.json`` and ``tokenizer_config.json`` (the ``tokenizers`` library's format) from a
llama2.c ``tokenizer.bin``, for the tools that tokenize as the served model does.

A llama2.c tokenizer is a sentencepiece BPE model exported as pieces and scores. The ``tokenizers``
equivalent is a BPE model with byte fallback over the same ids, a ``Metaspace`` pre-tokenizer
(``▁`` for spaces, one prepended to the first word), BOS added in front, and merges derived from
the scores the way Hugging Face's sentencepiece converter derives them: for each piece, every
split into two pieces of the vocabulary (ordered by their ids), then all merges sorted by
``(score of the merged piece, length of the left part, length of the right part)``, largest first,
ties kept in order. Byte tokens (``<0xXX>``) and the three specials take no part in merges.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from speedbench.engine.gguf_export import read_tokenizer

SPECIALS = ("<unk>", "<s>", "</s>")


def bpe_merges(tokens: list[str], scores: list[float]) -> list[tuple[str, str]]:
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for index, piece in enumerate(tokens):
        local = [(piece[:k], piece[k:], scores[index]) for k in range(1, len(piece))
                 if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges += local
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in merges]


def tokenizer_json(tokens: list[str], scores: list[float]) -> dict:
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(SPECIALS)]
    if tokens[:3] != list(SPECIALS):
        raise ValueError(f"expected the first tokens to be {SPECIALS}, got {tokens[:3]}")
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [list(m) for m in bpe_merges(tokens, scores)]},
    }


TOKENIZER_CONFIG = {"backend": "tokenizers", "bos_token": "<s>", "eos_token": "</s>", "is_local": True,
                    "local_files_only": False, "model_max_length": 1000000000000000019884624838656,
                    "pad_token": None, "tokenizer_class": "TokenizersBackend", "unk_token": "<unk>"}


def write_tokenizer_files(tokenizer_bin: str | Path, folder: str | Path, vocab_size: int) -> list[Path]:
    """``tokenizer.json`` and ``tokenizer_config.json`` into ``folder`` (each written whole, then renamed)."""
    tokens, scores = read_tokenizer(tokenizer_bin, vocab_size)
    written = []
    for name, data in (("tokenizer.json", tokenizer_json(tokens, scores)), ("tokenizer_config.json", TOKENIZER_CONFIG)):
        path = Path(folder) / name
        tmp = path.with_name(name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + ("" if name == "tokenizer.json" else "\n"))
        os.replace(tmp, path)
        written.append(path)
    return written
