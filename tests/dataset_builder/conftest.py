"""Shared fixtures: one small real Qualitative build per session (real sources, real USE embeddings).

Small = a pool cap of 24 candidates and 8 rows per category, and at most 6 Spec-Bench rows per
category in the report, so the cold build embeds a few hundred texts. The embedding cache lives in
the session's temporary folder, so later builds in the session reuse it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

SMALL_OPTIONS = {"per_category": 8, "pool_cap": 24, "specbench_compare_cap": 6, "selector": "greedy_swap",
                 "embedder": "use", "dedup_threshold": 0.95}


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embedding_cache")


@pytest.fixture(scope="session")
def small_build_options(embedding_cache) -> dict:
    return {**SMALL_OPTIONS, "embedding_cache": str(embedding_cache)}


def build_small(sources: Path, out: Path, options: dict, seed: int = 0):
    from speedbench.dataset_builder.qualitative import build_qualitative
    from speedbench.dataset_builder.registry import BuildContext
    from speedbench.dataset_builder.writer import write_dataset

    ctx = BuildContext(sources=sources, out_dir=out, seed=seed, options=dict(options), progress=False)
    built = build_qualitative(ctx)
    write_dataset(out, [built], {"seed": seed, "options": options, "sources": str(sources), "config": "qualitative"})
    return built


@pytest.fixture(scope="session")
def small_build(sources_dir, small_build_options, tmp_path_factory):
    """(dataset folder, BuiltConfig) of the session's small qualitative build."""
    out = tmp_path_factory.mktemp("build_a") / "speed-bench"
    return out, build_small(sources_dir, out, small_build_options)
