"""Fixtures for the leaderboard tests: a tiny dataset build, synthetic runs with known acceptance, bundles.

Loaded by tests/leaderboard/conftest.py and tests/space/conftest.py."""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
from speedbench.leaderboard.pack import pack_bundle
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run
from speedbench.leaderboard.validate import submit_bundle

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "space"

warnings.filterwarnings("ignore", message=".*Pandas4Warning.*")
try:  # pandas 3 announces pandas 4 changes through gradio; they are not ours to fix
    from pandas.errors import Pandas4Warning

    warnings.filterwarnings("ignore", category=Pandas4Warning)
except ImportError:  # pragma: no cover
    pass


METADATA = {
    "model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "EAGLE3-LLaMA3.3-Instruct-70B",
    "sd_method": "eagle3", "engine": "vllm", "engine_version": "0.11.0", "gpu": "B200",
    "draft_length": 3, "temperature": 0.0,
}

# Three entries of the seeded board: (metadata overrides, simulated engine)
SEED_ENTRIES = [
    ({}, SimulatedEngine(engine="vllm", rates=(0.8, 0.7, 0.6), category_scale={"coding": 1.15, "writing": 0.8})),
    ({"model": "Qwen/Qwen3-Next-80B-A3B", "drafter": "native MTP", "sd_method": "mtp", "engine": "sglang",
      "engine_version": "0.5.4", "gpu": "H100", "draft_length": 2},
     SimulatedEngine(engine="sglang", engine_version="0.5.4", draft_length=2, rates=(0.9, 0.8),
                     category_scale={"math": 1.05})),
    ({"drafter": "n-gram (prompt lookup)", "sd_method": "ngram", "engine": "trtllm", "engine_version": "1.1.0"},
     SimulatedEngine(engine="trtllm", engine_version="1.1.0", rates=(0.5, 0.3, 0.2), step_time_s=0.018)),
]


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("speed-bench") / "speed-bench", rows_per_category=5)


@pytest.fixture(scope="session")
def known_builds(dataset_dir) -> KnownBuilds:
    return KnownBuilds([describe_dataset(dataset_dir, name="synthetic test build")])


@pytest.fixture(scope="session")
def known_builds_dir(tmp_path_factory, known_builds) -> Path:
    import json

    folder = tmp_path_factory.mktemp("known_builds")
    for i, build in enumerate(known_builds.builds):
        (folder / f"build{i}.json").write_text(json.dumps(build.to_dict()), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def make_entry_runs(tmp_path_factory, dataset_dir):
    """``make(engine, seed, throughput=True, started_unix_s=1.7e9)`` -> (sd run dirs, baseline run dirs)."""

    def make(engine: SimulatedEngine, seed: int, throughput: bool = True, started_unix_s: float = 1.7e9):
        root = tmp_path_factory.mktemp(f"runs-{engine.engine}-{seed}")
        when = {"started_unix_s": started_unix_s}
        sd = [make_run(root / "qual", dataset_dir, "qualitative", engine, seed=seed, **when)]
        baselines = []
        if throughput:
            sd.append(make_run(root / "tp1k", dataset_dir, "throughput_1k", engine, concurrencies=(1, 4), seed=seed + 1,
                               **when))
            ar = SimulatedEngine(engine=engine.engine, engine_version=engine.engine_version, speculative=False,
                                 step_time_s=engine.step_time_s * 0.7)
            baselines.append(make_run(root / "tp1k-ar", dataset_dir, "throughput_1k", ar, concurrencies=(1, 4),
                                      seed=seed + 2, **when))
        return sd, baselines

    return make


@pytest.fixture(scope="session")
def seed_bundles(make_entry_runs) -> list[bytes]:
    bundles = []
    for i, (overrides, engine) in enumerate(SEED_ENTRIES):
        sd, baselines = make_entry_runs(engine, seed=10 * i, throughput=(i != 1))
        bundles.append(pack_bundle(sd, {**METADATA, **overrides}, baselines))
    return bundles


@pytest.fixture(scope="session")
def valid_bundle(make_entry_runs) -> bytes:
    """A fourth entry, not in the seeded board: Llama with a vanilla draft model on llama.cpp."""
    engine = SimulatedEngine(engine="llamacpp", engine_version="b6000", rates=(0.7, 0.5, 0.3))
    sd, baselines = make_entry_runs(engine, seed=99)
    return pack_bundle(sd, {**METADATA, "drafter": "Llama-3.2-1B", "sd_method": "draft_model",
                            "engine": "llamacpp", "engine_version": "b6000", "gpu": "RTX 4090"}, baselines)


@pytest.fixture(scope="session")
def seeded_db_template(tmp_path_factory, seed_bundles, known_builds) -> Path:
    """A store holding the three seed entries, built once; tests get a copy."""
    path = tmp_path_factory.mktemp("seeded") / "board.sqlite3"
    store = LeaderboardStore(path)
    for i, bundle in enumerate(seed_bundles):
        submit_bundle(bundle, store, known_builds, submitted_at=f"2026-11-0{i + 1}T12:00:00Z")
    store.close()  # the last connection checkpoints the WAL into the main file
    return path


@pytest.fixture
def seeded_db(tmp_path, seeded_db_template) -> Path:
    path = tmp_path / "board.sqlite3"
    shutil.copyfile(seeded_db_template, path)
    return path


@pytest.fixture
def seeded_store(seeded_db) -> LeaderboardStore:
    store = LeaderboardStore(seeded_db)
    yield store
    store.close()


@pytest.fixture(scope="session")
def stats_runs(make_entry_runs):
    """An EAGLE-like vLLM entry whose records carry the engine's statistics (histograms, counts)."""
    engine = SimulatedEngine(engine="vllm", rates=(0.8, 0.6, 0.4), report_engine_stats=True)
    return make_entry_runs(engine, seed=55)


@pytest.fixture(scope="session")
def stats_bundle(stats_runs) -> bytes:
    sd, baselines = stats_runs
    return pack_bundle(sd, {**METADATA, "drafter": "stats drafter"}, baselines)


def load_helpers(name: str):
    """A helper module of this folder (tests run with --import-mode=importlib: no package imports)."""
    import importlib.util
    import sys

    key = f"speedbench_leaderboard_test_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def bundles():
    """Bundle-editing helpers (tests/leaderboard/bundles.py)."""
    return load_helpers("bundles")


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _gradio_offline(monkeypatch):
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("SPEEDBENCH_HUB_MIRROR", raising=False)
    monkeypatch.delenv("SPEEDBENCH_KNOWN_BUILDS", raising=False)
    yield
