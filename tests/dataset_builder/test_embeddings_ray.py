"""Embedding with Ray Data on a local Ray cluster (127.0.0.1 only): identical to the in-process path.

Starts a private two-CPU Ray cluster on this machine; the wrapped embedder is the real USE model.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20,
             _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


def test_ray_embeddings_equal_the_in_process_ones(local_ray, tmp_path):
    from speedbench.dataset_builder.embeddings import EmbeddingCache, embed_texts, get_embedder
    from speedbench.dataset_builder.embeddings.ray_shard import RayEmbedder

    # 150 texts = three embed_texts batches (64, 64, 22), spread over two actors.
    texts = [f"Frage {i}: wie spät ist es in Zone {i % 9}?" if i % 3 else f"question {i} on topic {i % 7}"
             for i in range(150)]
    sharded = RayEmbedder("use", address="auto", workers=2)
    local = get_embedder("use", workers=1)
    assert sharded.model_id == local.model_id            # one cache for both paths
    cache = EmbeddingCache(tmp_path)
    via_ray, embedded = embed_texts(texts, sharded, cache)
    assert embedded == 150
    in_process, _ = embed_texts(texts, local, None)
    np.testing.assert_array_equal(via_ray, in_process)
    again, embedded = embed_texts(texts, local, cache)  # the Ray results filled the shared cache
    assert embedded == 0
    np.testing.assert_array_equal(again, in_process)
    cache.close()
    local.close() if hasattr(local, "close") else None
