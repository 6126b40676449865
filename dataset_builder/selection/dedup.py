"""Near-duplicate removal with FAISS before selection.

Pools built from related sources hold near-copies (the same MMLU question under two mirrors, a
RealCritic MMLU-STEM item and its MMLU original, template-only differences). A pair with cosine
similarity >= ``threshold`` keeps only its first member (pool order). Exact inner-product search
(``IndexFlatIP.range_search``) on unit vectors; single-threaded for predictable timings.
"""
from __future__ import annotations

import numpy as np


def near_duplicates(embeddings: np.ndarray, threshold: float) -> np.ndarray:
    """Boolean mask of rows to drop: a row is dropped if an earlier kept row is at least ``threshold`` similar."""
    x = np.ascontiguousarray(embeddings, dtype=np.float32)
    n = len(x)
    drop = np.zeros(n, dtype=bool)
    if n < 2 or threshold >= 1.0:
        return drop
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    limits, _, neighbours = index.range_search(x, float(threshold))
    for i in range(n):
        if drop[i]:
            continue
        for j in neighbours[limits[i]:limits[i + 1]]:
            if j > i:
                drop[j] = True
    return drop
