"""Embedding a pool on several machines with Ray Data (``--ray auto|ADDRESS``; extra ``ray``).

``RayEmbedder`` wraps any registered embedder (``use``, ``openai``): ``embed_texts`` hands it the
same batches it would encode in-process (``encode_batches``), Ray Data sends each batch to a
worker actor that holds its own copy of the model, and the vectors come back in batch order. A
batch is encoded by one ``encode`` call on a worker exactly as it would be locally, so the result
is bit-identical to the in-process path (USE's output depends on which texts share a batch, not on
which machine runs it, given the same library versions). ``model_id`` is the wrapped embedder's,
so the content cache is shared with in-process builds.

``address``: ``"auto"`` joins the cluster this machine belongs to (``ray start`` was run here),
``"ray://host:10001"`` a remote one through Ray Client, ``"local"`` starts a private local
cluster for the duration of the call (tests, a single machine).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np


class _EmbedActor:
    """One per Ray worker: loads the embedder once, encodes one batch per call."""

    def __init__(self, name: str, kwargs: dict):
        from speedbench.dataset_builder.embeddings.models import get_embedder

        self.embedder = get_embedder(name, **kwargs)

    def __call__(self, batch: dict) -> dict:
        (texts,) = batch["texts"]          # batch_size=1: one embed_texts batch per call
        vectors = np.asarray(self.embedder.encode([str(t) for t in texts]), dtype=np.float32)
        return {"position": batch["position"], "vectors": vectors[None]}


class RayEmbedder:
    def __init__(self, name: str, address: str = "auto", workers: int = 2, num_cpus_per_worker: float = 1.0,
                 init_kwargs: dict | None = None, **embedder_kwargs):
        from speedbench.dataset_builder.embeddings.models import get_embedder

        self.name, self.address, self.workers = name, address, max(1, int(workers))
        self.num_cpus_per_worker, self.embedder_kwargs = num_cpus_per_worker, embedder_kwargs
        self.init_kwargs = dict(init_kwargs or {})
        # The wrapped model's id (and a local copy for single batches): the cache is shared.
        self._local = get_embedder(name, **embedder_kwargs)
        self.model_id = self._local.model_id

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._local.encode(texts)

    def _connect(self):
        import ray

        if ray.is_initialized():
            return ray, False
        if self.address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, **self.init_kwargs)
        else:
            ray.init(address=self.address, log_to_driver=False, **self.init_kwargs)
        return ray, True

    def encode_batches(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        """The vectors of each batch, in order, embedded by ``workers`` Ray actors."""
        if not batches:
            return
        ray, started = self._connect()
        try:
            context = ray.data.DataContext.get_current()
            context.execution_options.preserve_order = True
            items = [{"position": i, "texts": list(batch)} for i, batch in enumerate(batches)]
            dataset = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * self.workers))
            embedded = dataset.map_batches(_EmbedActor, fn_constructor_args=(self.name, self.embedder_kwargs),
                                           batch_size=1, batch_format="numpy", compute=ray.data.ActorPoolStrategy(
                                               size=self.workers), num_cpus=self.num_cpus_per_worker)
            results = {int(row["position"]): np.asarray(row["vectors"], dtype=np.float32)
                       for row in embedded.iter_rows()}
        finally:
            if started:
                ray.shutdown()
        missing = [i for i in range(len(batches)) if i not in results]
        if missing:
            raise RuntimeError(f"ray: {len(missing)} batch(es) came back without embeddings (first: {missing[0]})")
        for position in range(len(batches)):
            yield results[position]

    def close(self) -> None:
        if hasattr(self._local, "close"):
            self._local.close()
