"""Embeddings through the openai SDK against a local OpenAI-compatible stand-in (issue 14, item 3).

The stand-in (aiohttp on 127.0.0.1; the SDK's httpx2 transport is not intercepted by respx) answers
``POST /v1/embeddings`` like OpenAI / vLLM: vectors in a shuffled order with their ``index``, a 400
for a request over its input limit, and scripted faults: 429 with ``retry-after-ms`` and requests
that hang past the client's timeout. Expected vectors are computed here from the text, not taken
from the code under test.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading

import numpy as np
import pytest

from speedbench.dataset_builder.embeddings import EmbeddingCache, embed_texts, get_embedder
from speedbench.dataset_builder.embeddings.service import ServiceEmbedder, request_batches

pytest.importorskip("openai")
DIM = 8


def expected_vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(DIM)


class EmbeddingStandin:
    """An OpenAI-compatible embeddings server in a thread; ``script`` lists the fault for each request
    in arrival order ("429", "hang" or "ok"; requests past its end are "ok")."""

    def __init__(self, max_inputs: int = 16, script: list[str] | None = None):
        self.max_inputs, self.script = max_inputs, list(script or [])
        self.requests: list[dict] = []
        self._ready = threading.Event()

    async def _embeddings(self, request):
        from aiohttp import web

        body = await request.json()
        number = len(self.requests)
        self.requests.append({"auth": request.headers.get("Authorization"), "body": body})
        fault = self.script[number] if number < len(self.script) else "ok"
        if fault == "429":
            return web.json_response({"error": {"message": "rate limited", "type": "rate_limit"}}, status=429,
                                     headers={"retry-after-ms": "5"})
        if fault == "hang":
            await self._stop.wait()        # never answers while the client waits: its timeout fires
        inputs = body["input"]
        if len(inputs) > self.max_inputs:
            return web.json_response({"error": {"message": f"at most {self.max_inputs} inputs"}}, status=400)
        data = [{"object": "embedding", "index": i, "embedding": expected_vector(t).tolist()} for i, t in enumerate(inputs)]
        return web.json_response({"object": "list", "data": data[::-1], "model": body["model"],
                                  "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def _serve(self):
        from aiohttp import web

        async def main():
            self._stop = asyncio.Event()
            app = web.Application()
            app.router.add_post("/v1/embeddings", self._embeddings)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
            self._ready.set()
            await self._stop.wait()
            await runner.cleanup()

        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(main())

    def __enter__(self):
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()


def unit(v):
    return v / np.linalg.norm(v)


def test_request_batches_respect_inputs_and_characters():
    texts = ["a" * 10] * 5 + ["b" * 100] + ["c"] * 3
    assert request_batches(texts, max_inputs=2, max_chars=1000) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    assert request_batches(texts, max_inputs=100, max_chars=50) == [(0, 5), (5, 6), (6, 9)]
    assert request_batches([], 4, 10) == []


def test_vectors_are_in_input_order_batched_within_the_limit(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    texts = [f"prompt number {i}" for i in range(37)]
    with EmbeddingStandin(max_inputs=16) as server:
        embedder = ServiceEmbedder(model="bge-m3", base_url=server.url, max_inputs=16)
        vectors = embedder.encode(texts)
        embedder.close()
    np.testing.assert_allclose(vectors, np.stack([expected_vector(t) for t in texts]), rtol=1e-6)
    assert [len(r["body"]["input"]) for r in server.requests] == [16, 16, 5]
    assert all(r["auth"] == "Bearer sk-local" and r["body"]["model"] == "bge-m3" for r in server.requests)
    assert embedder.model_id == f"openai-compatible/{server.url.split('/')[2]}/bge-m3"


def test_429s_and_timeouts_are_retried_with_backoff(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    texts = [f"t{i}" for i in range(20)]
    with EmbeddingStandin(max_inputs=10, script=["429", "429", "ok", "hang", "429"]) as server:
        embedder = ServiceEmbedder(model="m", base_url=server.url, max_inputs=10, timeout=0.5, max_retries=4)
        vectors = embedder.encode(texts)
        embedder.close()
    np.testing.assert_allclose(vectors, np.stack([expected_vector(t) for t in texts]), rtol=1e-6)
    # batch 1: 429, 429, ok; batch 2: hang (timeout), 429, ok -> six requests, two batches of 10
    assert len(server.requests) == 6
    assert [r["body"]["input"][0] for r in server.requests] == ["t0"] * 3 + ["t10"] * 3
    assert server.requests[0]["auth"] == "Bearer no-key"      # self-hosted, no key: placeholder


def test_a_batch_that_keeps_failing_names_the_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with EmbeddingStandin(script=["429"] * 10) as server:
        embedder = ServiceEmbedder(model="m", base_url=server.url, max_retries=2)
        with pytest.raises(RuntimeError, match=r"127\.0\.0\.1.*/embeddings: RateLimitError"):
            embedder.encode(["x"])
        embedder.close()
    assert len(server.requests) == 3
    with EmbeddingStandin(max_inputs=2) as server:        # a server limit below ours: a clear error
        embedder = ServiceEmbedder(model="m", base_url=server.url, max_inputs=8, max_retries=0)
        with pytest.raises(RuntimeError, match="BadRequestError"):
            embedder.encode(["a", "b", "c"])
        embedder.close()


def test_cached_by_content_second_pass_sends_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    texts = ["alpha", "beta", "alpha", "gamma"]
    with EmbeddingStandin() as server:
        embedder = get_embedder("openai", base_url=server.url, model="m")
        assert isinstance(embedder, ServiceEmbedder)
        cache = EmbeddingCache(tmp_path)
        first, embedded = embed_texts(texts, embedder, cache)
        assert embedded == 3 and len(server.requests) == 1
        second, embedded = embed_texts(texts, embedder, cache)
        assert embedded == 0 and len(server.requests) == 1
        cache.close()
        embedder.close()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first[1], unit(expected_vector("beta")), rtol=1e-6)
    np.testing.assert_array_equal(first[0], first[2])


def test_the_default_openai_endpoint_needs_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        ServiceEmbedder()


def test_curate_with_an_embedding_server(tmp_path, monkeypatch, capsys):
    from speedbench.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    records = [{"text": f"question {i} about {topic}", "topic": topic} for topic in ("a", "b") for i in range(12)]
    source = tmp_path / "p.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    with EmbeddingStandin(max_inputs=64) as server:
        code = main(["curate", str(source), "--text-field", "text", "--group-by", "topic", "--per-group", "4",
                     "--config", "mine", "--out", str(tmp_path / "out"), "--no-progress", "--embedder", "openai",
                     "--embedding-url", server.url, "--embedding-model", "e5", "--embedding-cache",
                     str(tmp_path / "cache"), "--dedup-threshold", "1"])
    assert code == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["configs"]["mine"]["stats"]["embedder"].endswith("/e5")
    assert manifest["configs"]["mine"]["rows"] == 8


def test_build_passes_the_endpoint_to_the_qualitative_embedder(monkeypatch):
    import argparse

    from speedbench.cli.build import build_options, register
    from speedbench.dataset_builder.qualitative.builder import service_options

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["build", "--embedder", "openai", "--embedding-url", "http://127.0.0.1:9/v1",
                              "--embedding-model", "bge-m3"])
    options = build_options(args)
    assert service_options(options) == {"base_url": "http://127.0.0.1:9/v1", "model": "bge-m3"}
    default = build_options(parser.parse_args(["build"]))
    assert "embedding_url" not in default and service_options(default) == {}
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedder = get_embedder("openai", **service_options(options))
    assert embedder.model_id == "openai-compatible/127.0.0.1:9/bge-m3"
    embedder.close()
