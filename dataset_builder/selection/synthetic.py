"""Clustered synthetic pools of unit vectors, generated shard by shard (tests and benchmarks).

Real prompt pools are clustered (topics, templates, languages), which is what makes diverse
selection non-trivial: ``n_clusters`` seeded random centres, each point ``centre + spread * noise``
normalised to unit length. Shard ``i`` is drawn from its own stream ``(seed, i)``, so a pool of
10 million rows can be written to disk one shard at a time and any shard regenerated alone.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np


def cluster_centres(d: int, n_clusters: int, seed: int, common: float = 0.45) -> np.ndarray:
    """Unit centres sharing a common direction: centre . centre' ~ ``common`` (embeddings of one
    category are far from orthogonal: USE gives a mean pairwise cosine of about 0.2-0.3)."""
    rng = np.random.default_rng([seed, 0x5EED])
    own = rng.standard_normal((n_clusters, d)) / np.sqrt(d)
    shared = np.full(d, 1.0 / np.sqrt(d))
    centres = np.sqrt(common) * shared + np.sqrt(1.0 - common) * own
    return (centres / np.linalg.norm(centres, axis=1, keepdims=True)).astype(np.float32)


def clustered_shard(shard: int, rows: int, d: int, n_clusters: int = 64, spread: float = 1.0,
                    seed: int = 0, common: float = 0.45) -> np.ndarray:
    """``rows`` unit vectors (float32) of shard ``shard``; deterministic in all arguments."""
    centres = cluster_centres(d, n_clusters, seed, common)
    rng = np.random.default_rng([seed, shard])
    labels = rng.integers(n_clusters, size=rows)
    x = rng.standard_normal((rows, d), dtype=np.float32)
    x *= np.float32(spread / np.sqrt(d))
    x += centres[labels]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def clustered_shards(n: int, d: int, shard_rows: int = 100_000, **kwargs) -> Iterator[np.ndarray]:
    for shard, start in enumerate(range(0, n, shard_rows)):
        yield clustered_shard(shard, min(shard_rows, n - start), d, **kwargs)


def clustered_pool(n: int, d: int, shard_rows: int = 100_000, **kwargs) -> np.ndarray:
    """The whole pool in memory (n x d float32), filled shard by shard without a second copy."""
    out = np.empty((n, d), dtype=np.float32)
    start = 0
    for shard in clustered_shards(n, d, shard_rows, **kwargs):
        out[start:start + len(shard)] = shard
        start += len(shard)
    return out
