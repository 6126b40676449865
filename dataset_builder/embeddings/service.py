"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint, through the ``openai`` SDK.

OpenAI itself (``text-embedding-3-large``, the paper's model), or a vLLM / TEI / llama.cpp
embedding server (``--embedding-url http://host:port/v1 --embedding-model NAME``). The key comes
from ``OPENAI_API_KEY`` when set; a self-hosted endpoint without one gets a placeholder key (the
SDK insists on one; servers started without ``--api-key`` ignore it).

- **Batching within the endpoint's limits**: a request carries at most ``max_inputs`` texts and
  at most ``max_request_chars`` characters (a stand-in for the per-request token limit: OpenAI
  allows 2,048 inputs and 300,000 tokens a request; self-hosted servers are often lower).
- **Retries with backoff**: the SDK retries 408 / 409 / 429 / 5xx answers, timeouts and dropped
  connections with exponential backoff and jitter, honouring ``Retry-After`` /
  ``retry-after-ms``, up to ``max_retries`` times; a batch that still fails raises RuntimeError
  naming the endpoint.
- **Validated answers**: one finite vector per input, in input order (by ``index``), all of one
  dimension; anything else is an error rather than a silently wrong embedding.

Caching by content is ``embed_texts``' job (``models.py``): ``model_id`` includes the endpoint's
host for self-hosted servers, so two servers that happen to share a model name never share cache
entries.
"""
from __future__ import annotations

from urllib.parse import urlparse

import numpy as np

from speedbench import settings

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-large"
PLACEHOLDER_KEY = "no-key"


def request_batches(texts: list[str], max_inputs: int, max_chars: int) -> list[tuple[int, int]]:
    """(start, stop) ranges of ``texts``: at most ``max_inputs`` texts and ``max_chars`` characters
    each (a single longer text goes alone)."""
    if max_inputs < 1 or max_chars < 1:
        raise ValueError("max_inputs and max_request_chars must be positive")
    ranges, start, chars = [], 0, 0
    for position, text in enumerate(texts):
        if position > start and (position - start >= max_inputs or chars + len(text) > max_chars):
            ranges.append((start, position))
            start, chars = position, 0
        chars += len(text)
    if start < len(texts):
        ranges.append((start, len(texts)))
    return ranges


class ServiceEmbedder:
    """``encode(texts) -> (len(texts), d) float32`` over an OpenAI-compatible endpoint."""

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, api_key: str | None = None,
                 max_inputs: int = 256, max_request_chars: int = 400_000, max_retries: int = 6,
                 timeout: float = 120.0, dimensions: int | None = None):
        from openai import OpenAI

        self.base_url = (base_url or settings.openai_base_url() or OPENAI_URL).rstrip("/")
        self.model = model
        key = api_key or settings.openai_api_key()
        if not key:
            if self.base_url == OPENAI_URL:
                raise ValueError("the openai embedder needs OPENAI_API_KEY for api.openai.com "
                                 "(or --embedding-url for a self-hosted endpoint, or --embedder use offline)")
            key = PLACEHOLDER_KEY
        self.max_inputs, self.max_request_chars, self.dimensions = max_inputs, max_request_chars, dimensions
        self._client = OpenAI(api_key=key, base_url=self.base_url, max_retries=max_retries, timeout=timeout)
        host = urlparse(self.base_url).netloc
        suffix = f"@{dimensions}d" if dimensions else ""
        self.model_id = f"openai/{model}{suffix}" if self.base_url == OPENAI_URL else f"openai-compatible/{host}/{model}{suffix}"

    def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            response = self._client.embeddings.create(model=self.model, input=texts, encoding_format="float", **extra)
        except openai.OpenAIError as error:
            raise RuntimeError(f"{self.base_url}/embeddings: {type(error).__name__}: {error}") from error
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(texts))):
            raise RuntimeError(f"{self.base_url}/embeddings returned {len(data)} vectors (indices "
                               f"{[item.index for item in data][:8]}...) for {len(texts)} inputs")
        vectors = [item.embedding for item in data]
        if len({len(v) for v in vectors}) != 1:
            raise RuntimeError(f"{self.base_url}/embeddings returned vectors of different dimensions")
        out = np.asarray(vectors, dtype=np.float32)
        if not np.isfinite(out).all() or out.shape[1] == 0:
            raise RuntimeError(f"{self.base_url}/embeddings returned empty or non-finite vectors")
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        parts = [self._request(texts[a:b]) for a, b in request_batches(texts, self.max_inputs, self.max_request_chars)]
        if len({p.shape[1] for p in parts}) > 1:
            raise RuntimeError(f"{self.base_url}/embeddings changed dimension between requests")
        return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    def close(self) -> None:
        self._client.close()


# The name the embedder registry and earlier code use.
OpenAIEmbedder = ServiceEmbedder
