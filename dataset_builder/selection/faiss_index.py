"""Maximum-inner-product search over a pool of unit embeddings, exact or approximate (FAISS).

Selection only ever asks one question of the pool: the ``T`` rows with the largest inner product
with a query vector (``-s`` finds the rows least similar to the selected set). A ``PoolIndex``
answers it and keeps the original vectors (``store``: an array or a memory-mapped file, float32 or
float16) so that every returned candidate is rescored exactly.

- ``flat`` (default, exact): FAISS's brute-force inner-product kernel (``faiss.knn``, what
  ``IndexFlatIP.search`` runs) over the store itself, so the vectors are not copied into an
  index; the rows are split into one contiguous block per thread, searched in parallel (FAISS
  releases the GIL; one query alone would use one core) and merged. Its error is bounded
  (float32 arithmetic), so selection over it is exact.
- ``ivf`` (``IVF{nlist},Flat``), ``hnsw`` (``HNSW32,Flat``), ``ivfpq`` (``IVF{nlist},PQ{m}``) and
  ``pqfs`` (``PQ{m}x4fs``, 4-bit fast-scan product quantisation: m/2 bytes a vector, no coarse
  quantiser to assign to, so 10 million vectors encode in minutes): approximate, built by
  ``faiss.index_factory`` with the inner-product metric, trained on a seeded sample and filled
  chunk by chunk from the store (a float16 memory map is read one chunk at a time).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from speedbench.dataset_builder.selection.exact import float32_error_bound, take_rows

INDEX_KINDS = ("flat", "ivf", "hnsw", "ivfpq", "pqfs")
CHUNK_ROWS = 65_536


@dataclass
class PoolIndex:
    store: np.ndarray                    # n x d original vectors (array or np.memmap), rescored exactly
    kind: str = "flat"
    threads: int = 1
    index: object = None                 # the FAISS index (approximate kinds)
    build_seconds: float = 0.0
    params: dict = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.kind == "flat"

    @property
    def n(self) -> int:
        return int(self.store.shape[0])

    @property
    def d(self) -> int:
        return int(self.store.shape[1])

    def error_bound(self, query_norm: float) -> float:
        """|approximate - exact| inner product for a unit row and a query of this norm (exact kinds)."""
        return float32_error_bound(self.d, np.float32, scale=query_norm + 1.0)

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(inner products, row ids) of the ``count`` rows with the largest inner product, best first;
        ids of -1 mark missing results (approximate kinds may return fewer)."""
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        count = int(min(count, self.n))
        if self.kind == "flat":
            return self._flat_search(q, count)
        import faiss

        if self.kind == "hnsw":
            ef = max(int(self.params.get("efSearch", 0)), count)
            scores, ids = self.index.search(q, count, params=faiss.SearchParametersHNSW(efSearch=ef))
            return scores[0], ids[0]
        scores, ids = self.index.search(q, count)
        if hasattr(self.index, "nprobe") or "IVF" in self.params.get("factory", ""):
            # -s points away from the data: the lists nearest to it can hold fewer rows than asked
            # for; probe more lists until enough come back.
            ivf = faiss.extract_index_ivf(self.index)
            nprobe = ivf.nprobe
            while (ids[0] >= 0).sum() < count and nprobe < ivf.nlist:
                nprobe = min(ivf.nlist, nprobe * 4)
                scores, ids = self.index.search(q, count, params=faiss.SearchParametersIVF(nprobe=nprobe))
        return scores[0], ids[0]

    def _flat_search(self, q: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        bounds = np.linspace(0, self.n, max(1, min(self.threads, self.n // 4096 or 1)) + 1).astype(np.int64)

        def block(i: int):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            scores, ids = faiss.knn(q, self.store[lo:hi], min(count, hi - lo), metric=faiss.METRIC_INNER_PRODUCT)
            return scores[0], ids[0] + lo

        if len(bounds) == 2:
            return block(0)
        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            parts = list(pool.map(block, range(len(bounds) - 1)))
        scores = np.concatenate([p[0] for p in parts])
        ids = np.concatenate([p[1] for p in parts])
        order = np.lexsort((ids, -scores))[:count]
        return scores[order], ids[order]


def factory_string(kind: str, n: int, d: int, nlist: int | None = None, pq_m: int | None = None) -> str:
    nlist = nlist or int(max(16, min(4096, 4 * np.sqrt(n))))
    if kind == "ivf":
        return f"IVF{nlist},Flat"
    if kind == "hnsw":
        return "HNSW32,Flat"
    if kind == "ivfpq":
        return f"IVF{nlist},PQ{pq_m or d // 8}np"   # np: no polysemous training (minutes, unused here)
    if kind == "pqfs":
        return f"PQ{pq_m or d // 4}x4fs"
    raise ValueError(f"unknown index kind {kind!r}; choose from {', '.join(INDEX_KINDS)}")


def _read_rows(store: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows start:stop; a memory-mapped store is read with a plain file read, so a pass over a
    pool larger than memory does not keep its pages mapped (and counted in RSS)."""
    if isinstance(store, np.memmap) and getattr(store, "filename", None) and store.flags.c_contiguous:
        row_bytes = store.shape[1] * store.itemsize
        return np.fromfile(store.filename, dtype=store.dtype, count=(stop - start) * store.shape[1],
                           offset=int(store.offset) + start * row_bytes).reshape(-1, store.shape[1])
    return store[start:stop]


def _chunks(store: np.ndarray, rows: np.ndarray | None = None):
    n = len(store) if rows is None else len(rows)
    for start in range(0, n, CHUNK_ROWS):
        part = (_read_rows(store, start, min(n, start + CHUNK_ROWS)) if rows is None
                else take_rows(store, np.sort(rows[start:start + CHUNK_ROWS])))
        yield np.ascontiguousarray(part, dtype=np.float32)


def build_index(store: np.ndarray, kind: str = "flat", threads: int = 1, seed: int = 0,
                train_rows: int | None = None, nlist: int | None = None, pq_m: int | None = None,
                nprobe: int = 16, ef_search: int = 128) -> PoolIndex:
    """A ``PoolIndex`` over ``store`` (n x d); approximate kinds are trained on ``train_rows``
    seeded random rows and filled in chunks of ``CHUNK_ROWS``."""
    import time

    import faiss

    faiss.omp_set_num_threads(max(1, int(threads)))
    if kind == "flat":
        if np.asarray(store[:1]).dtype != np.float32:
            raise ValueError("the flat (exact) index searches the vectors in place: they must be float32")
        return PoolIndex(store=store, kind="flat", threads=threads)
    start = time.perf_counter()
    n, d = store.shape
    spec = factory_string(kind, n, d, nlist, pq_m)
    index = faiss.index_factory(d, spec, faiss.METRIC_INNER_PRODUCT)
    if train_rows is None:
        # IVF k-means wants ~40 rows per list; 4-bit PQ has 16 centroids per sub-quantiser, and its
        # training time grows with the sample (32k rows: ~30 s on 2 busy cores) for no gain.
        train_rows = 16_384 if kind == "pqfs" else 65_536
    if not index.is_trained:
        sample = np.random.default_rng(seed).choice(n, size=min(n, train_rows), replace=False)
        index.train(np.concatenate(list(_chunks(store, sample))))
    for chunk in _chunks(store):
        index.add(chunk)
    params = {"factory": spec}
    if hasattr(index, "nprobe"):
        faiss.extract_index_ivf(index).nprobe = nprobe
        params["nprobe"] = nprobe
    if kind == "hnsw":
        index.hnsw.efSearch = ef_search
        params["efSearch"] = ef_search
    return PoolIndex(store=store, kind=kind, threads=threads, index=index,
                     build_seconds=time.perf_counter() - start, params=params)
