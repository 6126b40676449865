"""Algorithm 1 over FAISS (issue 14): the exact index selects exactly what the numpy reference
selects; approximate indexes return valid selections whose objective is recomputed exactly.

Expected values come from the independent numpy implementation (maintained N x k sums) and from
direct recomputation of the objective, never from the code under test.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from speedbench.dataset_builder.selection import select
from speedbench.dataset_builder.selection.faiss_index import build_index
from speedbench.dataset_builder.selection.faiss_select import faiss_greedy, faiss_greedy_swap
from speedbench.dataset_builder.selection.greedy_swap import greedy, greedy_swap_select
from speedbench.dataset_builder.selection.synthetic import clustered_pool

pytest.importorskip("faiss")


def objective_by_loops(x, subset):
    return sum(float(np.float64(x[i]) @ np.float64(x[j])) for i, j in combinations(subset, 2))


def pool_with_copies(seed, distinct=150, copies=3):
    x = np.repeat(clustered_pool(distinct, 64, n_clusters=10, seed=seed), copies, axis=0)
    return x[np.random.default_rng(seed).permutation(len(x))]


POOLS = [(2000, 128, 40, 12), (3000, 512, 80, 24), (600, 512, 80, 24), (5000, 64, 30, 8)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,d,k,clusters", POOLS)
def test_exact_faiss_selects_what_numpy_selects(seed, n, d, k, clusters):
    x = clustered_pool(n, d, n_clusters=clusters, seed=seed)
    expected = greedy_swap_select(x, k, np.random.default_rng(seed))
    for threads in (1, 2):
        got = faiss_greedy_swap(build_index(x, "flat", threads=threads), k, np.random.default_rng(seed))
        assert got.indices.tolist() == expected.indices.tolist()
        assert got.swaps == expected.swaps
        assert got.objective == pytest.approx(objective_by_loops(x, got.indices), abs=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_greedy_phase_alone_matches_too(seed):
    x = clustered_pool(4000, 96, n_clusters=12, seed=10 + seed)
    expected = greedy(x, 50, np.random.default_rng(seed)).indices
    got = faiss_greedy(build_index(x, "flat"), 50, np.random.default_rng(seed)).indices
    assert got.tolist() == expected.tolist()
    assert select(x, 50, "greedy", seed=seed).tolist() == sorted(expected.tolist())
    assert select(x, 50, "greedy", seed=seed, backend="numpy").tolist() == sorted(expected.tolist())


@pytest.mark.parametrize("seed", range(3))
def test_pools_with_exact_ties_match(seed):
    x = pool_with_copies(seed)
    expected = greedy_swap_select(x, 25, np.random.default_rng(seed)).indices
    got = faiss_greedy_swap(build_index(x, "flat"), 25, np.random.default_rng(seed)).indices
    assert got.tolist() == expected.tolist()


def test_narrow_first_queries_are_widened_until_the_bound_holds():
    # A first swap query of 8 rows cannot hold the best swap: the bound forces wider queries,
    # and the result is still the numpy reference's.
    x = clustered_pool(3000, 128, n_clusters=16, seed=5)
    expected = greedy_swap_select(x, 40, np.random.default_rng(5))
    got = faiss_greedy_swap(build_index(x, "flat"), 40, np.random.default_rng(5), first_query=8)
    assert got.indices.tolist() == expected.indices.tolist()
    assert got.widest_query > 160


@pytest.mark.parametrize("kind", ["ivf", "hnsw", "ivfpq", "pqfs"])
def test_approximate_indexes_give_valid_selections_with_exact_objectives(kind):
    x = clustered_pool(6000, 64, n_clusters=12, seed=3)
    exact = faiss_greedy_swap(build_index(x, "flat"), 30, np.random.default_rng(3))
    got = faiss_greedy_swap(build_index(x, kind, seed=1, nlist=32, pq_m=16), 30, np.random.default_rng(3))
    assert len(set(got.indices.tolist())) == 30 and got.indices.min() >= 0 and got.indices.max() < 6000
    assert got.objective == pytest.approx(objective_by_loops(x, got.indices), abs=1e-6)
    # Exact rescoring keeps the approximate search close to the exact optimum (within 5% of f).
    assert got.objective <= exact.objective + 0.05 * abs(exact.objective)


def test_float16_memory_map_store_with_a_compressed_index(tmp_path):
    x = clustered_pool(5000, 64, n_clusters=10, seed=8)
    path = tmp_path / "pool.f16"
    stored = np.memmap(path, dtype=np.float16, mode="w+", shape=x.shape)
    stored[:] = x
    stored.flush()
    store = np.memmap(path, dtype=np.float16, mode="r", shape=x.shape)
    got = faiss_greedy_swap(build_index(store, "pqfs", pq_m=16), 25, np.random.default_rng(0))
    assert got.objective == pytest.approx(objective_by_loops(np.asarray(store, dtype=np.float64), got.indices),
                                          abs=1e-9)
    with pytest.raises(ValueError, match="float32"):
        build_index(store, "flat")


def test_unknown_backend_and_index_are_refused():
    x = clustered_pool(100, 16, n_clusters=4, seed=0)
    with pytest.raises(ValueError, match="unknown selection backend"):
        select(x, 5, backend="gpu")
    with pytest.raises(ValueError, match="unknown index kind"):
        select(x, 5, index="lsh")
