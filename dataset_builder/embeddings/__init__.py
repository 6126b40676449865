"""Sentence embeddings for the candidate prompts, cached by content hash.

``embed_texts(texts, embedder, cache)`` returns an (N, d) float32 array of unit-norm rows; texts
already in the cache (same model, same text) are not embedded again, so a rebuild only embeds
what changed.
"""
from __future__ import annotations

from speedbench.dataset_builder.embeddings.cache import EmbeddingCache, default_cache_dir
from speedbench.dataset_builder.embeddings.models import (Embedder, OpenAIEmbedder, UseEmbedder, embed_texts,
                                                          get_embedder)

__all__ = ["Embedder", "EmbeddingCache", "OpenAIEmbedder", "UseEmbedder", "default_cache_dir", "embed_texts",
           "get_embedder"]
