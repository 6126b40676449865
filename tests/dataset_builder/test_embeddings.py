"""Embedding cache (content-hash keyed) and the two embedders (USE offline, OpenAI API against a local stand-in)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from speedbench.dataset_builder.embeddings import EmbeddingCache, OpenAIEmbedder, embed_texts
from speedbench.dataset_builder.embeddings.cache import content_key


class CountingEmbedder:
    """Deterministic toy vectors from the text's bytes; counts what it is asked to embed."""
    model_id = "toy/v1"

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen += list(texts)
        return np.array([[len(t), t.count("a") + 1.0, 1.0] for t in texts], dtype=np.float32)


def test_cache_embeds_each_text_once_and_returns_the_same_vectors(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path)
    first, embedded = embed_texts(["banana", "apple", "banana"], embedder, cache)
    assert embedded == 2 and embedder.seen == ["banana", "apple"]
    expected = np.array([6, 4, 1.0]) / np.linalg.norm([6, 4, 1.0])
    np.testing.assert_allclose(first[0], expected, rtol=1e-6)
    np.testing.assert_allclose(first[0], first[2])
    cache.close()

    cache = EmbeddingCache(tmp_path)        # a new process would see the same file
    second, embedded = embed_texts(["apple", "cherry", "banana"], embedder, cache)
    assert embedded == 1 and embedder.seen[-1:] == ["cherry"]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    assert len(cache) == 3


def test_cache_key_depends_on_model_and_text():
    assert content_key("a", "x") != content_key("b", "x") != content_key("a", "y")
    assert len(content_key("a", "x")) == 64


def test_use_embedder_is_multilingual_and_unit_norm(embedding_cache):
    from speedbench.dataset_builder.embeddings import UseEmbedder

    vectors, _ = embed_texts(["The cat sleeps on the sofa.", "Die Katze schläft auf dem Sofa.",
                              "Quarterly revenue grew by four percent."], UseEmbedder(), EmbeddingCache(embedding_cache))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_use_vectors_do_not_depend_on_the_worker_count():
    """Two worker processes (one BLAS thread each) give the same bytes as one process, batch by batch."""
    from speedbench.dataset_builder.embeddings import UseEmbedder
    from speedbench.dataset_builder.embeddings.models import BATCH

    texts = [f"Sentence number {i} about {topic}." for i in range(BATCH + 4)
             for topic in ("rivers", "tax law")][: BATCH + 4]
    one = UseEmbedder(workers=1)
    two = UseEmbedder(workers=2)
    try:
        single, n_single = embed_texts(texts, one, None)
        parallel, n_parallel = embed_texts(texts, two, None)
    finally:
        two.close()
    assert n_single == n_parallel == len(texts)
    assert single.tobytes() == parallel.tobytes()
    assert two._pool is None                  # close() stopped the workers


class _OpenAIHandler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
        # Answer out of order, as the API may: the client must sort by index.
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                for i, t in enumerate(body["input"])][::-1]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def openai_standin():
    server = HTTPServer(("127.0.0.1", 0), _OpenAIHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _OpenAIHandler.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    thread.join()


def test_openai_embedder_speaks_the_embeddings_api(openai_standin, tmp_path):
    embedder = OpenAIEmbedder(api_key="sk-test", base_url=openai_standin)
    vectors, embedded = embed_texts(["ab", "abcd"], embedder, EmbeddingCache(tmp_path))
    assert embedded == 2
    request = _OpenAIHandler.requests[0]
    assert request["path"] == "/v1/embeddings" and request["auth"] == "Bearer sk-test"
    assert request["body"] == {"model": "text-embedding-3-large", "input": ["ab", "abcd"], "encoding_format": "float"}
    np.testing.assert_allclose(vectors[1], np.array([4.0, 1.0, 0.0]) / np.sqrt(17), rtol=1e-6)


def test_openai_embedder_needs_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
