"""Does FAISS near-duplicate removal help the selection? Real pools, with and without it.

For each category's capped pool (the same pools a default build uses; embeddings come from the
cache, so run after a build or expect a cold embedding pass), run greedy+swap on the pool as is
and on the pool after removing near-duplicates (cosine >= 0.95), and print the mean pairwise
similarity of the 80 chosen, their most similar pair, and how many chosen pairs are near-duplicates.
Minimising a sum tolerates one very similar pair if the rest are spread out; removing
near-duplicates first rules that out.

    .venv/bin/python bench/selection_dedup.py [--sources DIR] [--pool-cap 600] [--threshold 0.95]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from speedbench.dataset_builder.embeddings import EmbeddingCache, embed_texts, get_embedder
from speedbench.dataset_builder.qualitative.pools import cap_pool, collect_candidates, embedding_text
from speedbench.dataset_builder.selection import mean_pairwise_similarity, select
from speedbench.dataset_builder.selection.dedup import near_duplicates
from speedbench.dataset_builder.sources import SourceFiles
from speedbench.schema import QUALITATIVE_CATEGORIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=Path(os.environ.get(
        "SPEEDBENCH_SOURCES", Path(__file__).resolve().parents[2] / "shared" / "sources")))
    parser.add_argument("--pool-cap", type=int, default=600)
    parser.add_argument("--threshold", type=float, default=0.95)
    parser.add_argument("--k", type=int, default=80)
    args = parser.parse_args()

    candidates = collect_candidates(SourceFiles(args.sources))
    embedder, cache = get_embedder("use"), EmbeddingCache()
    print(f"{'category':<14} {'pool':>9} {'mean sim':>17} {'max pair':>15} {'pairs >= thr':>13} {'dedup s':>8}")
    totals = np.zeros(4)
    for category in QUALITATIVE_CATEGORIES:
        pool = cap_pool(category, candidates[category], args.pool_cap, 0)
        x, _ = embed_texts([embedding_text(r) for r in pool.rows], embedder, cache)
        t0 = time.perf_counter()
        kept = x[~near_duplicates(x, args.threshold)]
        t_dedup = time.perf_counter() - t0
        row = []
        for y in (x, kept):
            chosen = select(y, args.k, "greedy_swap", seed=1)
            gram = y[chosen] @ y[chosen].T
            np.fill_diagonal(gram, -1.0)
            row.append((mean_pairwise_similarity(y, chosen), gram.max(), int((np.triu(gram, 1) >= args.threshold).sum())))
        (m0, p0, d0), (m1, p1, d1) = row
        totals += [d0, d1, m0, m1]
        print(f"{category:<14} {len(x):>4}->{len(kept):<4} {m0:.4f} -> {m1:.4f}   {p0:.3f} -> {p1:.3f}   "
              f"{d0:>4} -> {d1:<4} {t_dedup:8.2f}")
    print(f"near-duplicate pairs among the selected, all categories: {int(totals[0])} without de-duplication, "
          f"{int(totals[1])} with; mean similarity {totals[2] / 11:.4f} -> {totals[3] / 11:.4f}")


if __name__ == "__main__":
    main()
