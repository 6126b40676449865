"""`speedbench run --dataset ORG/NAME`: a dataset config on the Hub, read with `datasets` from a local Hub
stand-in (`--online`) or from the datasets cache (the default, offline), measured like a built folder;
unresolved placeholder rows are refused with their count and the resolving command."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from speedbench.client.data.hub_dataset import HubDatasetId, fetch_command, parse_hub_id
from tests.standins.fixtures import read_jsonl, story_rows, write_dataset
from tests.standins.standin import StandinServer
from speedbench.client.data.workload import WorkloadError, dataset_fingerprint, load_conversations, resolve_dataset
from speedbench.schema import PLACEHOLDER_PREFIX, DatasetRow, rows_to_table

REPO_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hub_standin", REPO_ROOT / "tests" / "dataset_builder" / "hub_standin.py")
hub_standin = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hub_standin", hub_standin)
_spec.loader.exec_module(hub_standin)

REPO = "someorg/bench"
COMMIT = "b" * 40
CARD = """---
configs:
- config_name: tiny
  data_files:
  - split: test
    path: data/tiny/test-*.parquet
- config_name: placeholders
  data_files:
  - split: test
    path: data/placeholders/test-*.parquet
- config_name: published
  data_files:
  - split: test
    path: qualitative/test-*.parquet
- config_name: broken
  data_files:
  - split: test
    path: data/broken/test-*.parquet
---
# A small benchmark in the published layout
"""


def _parquet(rows) -> bytes:
    return _table_bytes(rows_to_table(rows))


def _placeholder(n: int) -> DatasetRow:
    return DatasetRow(category="qa", sub_category="x", turns=[PLACEHOLDER_PREFIX + f" (hle {n})"], source="hle",
                      src_id=str(n))


def _published_table():
    """Rows with exactly the published dataset's fields (no language or license column), under a
    path of the card's choosing: only load_dataset(repo, config) finds them."""
    import pyarrow as pa

    return pa.table({"question_id": [f"{n:032x}" for n in (10, 11)], "category": ["qa", "math"],
                     "sub_category": ["trivia", "algebra"], "turns": [["Who wrote Hamlet?"], ["What is 2 + 2?", "And 3 + 3?"]],
                     "source": ["s", "t"], "src_id": ["1", "2"], "difficulty": ["", "easy"], "multiturn": [False, True]})


def _table_bytes(table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


TINY = story_rows(3)
WITH_PLACEHOLDERS = story_rows(1) + [_placeholder(1), _placeholder(2)]


@pytest.fixture
def hub():
    with hub_standin.HubStandIn() as standin:
        standin.hosted[REPO] = {"sha": COMMIT, "files": {
            "README.md": CARD.encode(),
            "data/tiny/test-00000-of-00001.parquet": _parquet(TINY),
            "data/placeholders/test-00000-of-00001.parquet": _parquet(WITH_PLACEHOLDERS),
            "qualitative/test-00000-of-00001.parquet": _table_bytes(_published_table()),
            "data/broken/test-00000-of-00001.parquet": _table_bytes(_published_table().drop_columns(["turns"]))}}
        yield standin


@pytest.fixture
def datasets_cache(tmp_path, monkeypatch):
    """A datasets cache of this test's own, for this process and the processes it starts."""
    import datasets.config

    cache = tmp_path / "hf_home" / "datasets"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    return cache


def _env(hub, cache: Path) -> dict:
    # HF_HUB_OFFLINE=1 as in the tests' environment: only --online (or the fetch command) reaches the Hub
    return {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(cache.parent), "HF_DATASETS_CACHE": str(cache),
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def _run(env, url, models_dir, out, config, *extra):
    command = [sys.executable, "-m", "speedbench", "run", "--engine", "vllm", "--url", url, "--tokenizer",
               str(models_dir), "--dataset", REPO, "--config", config, "--out", str(out), "--no-progress",
               "--resamples", "50", "--concurrency", "1", "--max-tokens", "8", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_hub_ids_and_local_folders(tmp_path, monkeypatch):
    assert parse_hub_id("nvidia/SPEED-Bench") == HubDatasetId("nvidia/SPEED-Bench")
    assert parse_hub_id("nvidia/SPEED-Bench@v1.1") == HubDatasetId("nvidia/SPEED-Bench", "v1.1")
    assert parse_hub_id("./folder") is None and parse_hub_id("a/b/c") is None and parse_hub_id("name") is None
    # an existing folder wins over the Hub reading of the same name
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "nvidia" / "SPEED-Bench", TINY)
    assert parse_hub_id("nvidia/SPEED-Bench") is None
    assert resolve_dataset("nvidia/SPEED-Bench", "tiny") == Path("nvidia/SPEED-Bench")
    with pytest.raises(WorkloadError, match=r"--dataset \./missing: neither a dataset folder nor a Hub dataset id"):
        resolve_dataset("./missing", "tiny")
    assert fetch_command(HubDatasetId("nvidia/SPEED-Bench", "v1.1"), "qualitative") == (
        "HF_HUB_OFFLINE=0 HF_DATASETS_OFFLINE=0 python -c \"import datasets; datasets.load_dataset("
        "'nvidia/SPEED-Bench', 'qualitative', split='test', revision='v1.1')\"")


def _bash(command: str, env: dict) -> subprocess.CompletedProcess:
    # the printed command names `python`: the one of this environment
    env = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.e2e  # processes against the Hub stand-in
def test_not_cached_names_the_fetch_command_which_fills_the_cache(tmp_path, hub, datasets_cache):
    with pytest.raises(WorkloadError) as error:
        resolve_dataset(REPO, "tiny")          # offline, nothing cached: no request reaches the stand-in
    message = str(error.value)
    assert hub.requests == []
    assert f"--dataset {REPO} --config tiny: no local folder" in message and str(datasets_cache) in message
    assert "add --online to this command" in message
    command = fetch_command(HubDatasetId(REPO), "tiny")
    assert f"Fetch it once with: {command} " in message
    done = _bash(command, _env(hub, datasets_cache))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (REPO, COMMIT, "data/tiny/test-00000-of-00001.parquet") in hub.downloads

    requests = len(hub.requests)
    folder = resolve_dataset(REPO, "tiny")     # offline again: now from the cache
    assert len(hub.requests) == requests
    assert folder.is_relative_to(datasets_cache / "speedbench-inputs" / "someorg--bench" / "tiny")
    assert [c.turns for c in load_conversations(folder, "tiny")] == [r.turns for r in TINY]
    assert dataset_fingerprint(folder, "tiny") == dataset_fingerprint(write_dataset(tmp_path / "local", TINY), "tiny")
    note = json.loads((folder / "hub_source.json").read_text())
    assert note["repo_id"] == REPO and note["config"] == "tiny" and note["num_rows"] == 3
    assert resolve_dataset(REPO, "tiny") == folder   # written once, found again
    with pytest.raises(WorkloadError, match=r"(?s)--dataset someorg/bench --config nope: .*'nope'.*\['tiny'\]"
                                            r".*only cached configs are known; fetch it with: HF_HUB_OFFLINE=0"):
        resolve_dataset(REPO, "nope")


@pytest.mark.e2e
def test_run_online_then_offline_from_the_cache_and_placeholders_refused(tmp_path, hub, datasets_cache, models_dir):
    env = _env(hub, datasets_cache)
    with StandinServer("vllm") as server:
        online = _run(env, server.url, models_dir, tmp_path / "run1", "tiny", "--online")
        assert online.returncode == 0, online.stderr[-3000:]
        requests = len(hub.requests)
        offline = _run(env, server.url, models_dir, tmp_path / "run2", "tiny")
        assert offline.returncode == 0, offline.stderr[-3000:]
        assert len(hub.requests) == requests   # the second run read the cache only
        refused = _run(env, server.url, models_dir, tmp_path / "run3", "placeholders", "--online")
    local_fingerprint = dataset_fingerprint(write_dataset(tmp_path / "local", TINY), "tiny")
    for run in ("run1", "run2"):
        records = read_jsonl(tmp_path / run / "records.jsonl")
        assert len(records) == 3 and all(r["error"] is None for r in records)
        manifest = json.loads((tmp_path / run / "manifest.json").read_text())
        assert manifest["dataset_config_sha256"] == local_fingerprint
        assert Path(manifest["dataset_dir"]).is_relative_to(datasets_cache / "speedbench-inputs")
        source = manifest["dataset_source"]   # the Hub id, not only the cache folder
        assert (source["repo_id"], source["config"], source["split"], source["num_rows"]) == (REPO, "tiny", "test", 3)
    assert hub.unhandled == []

    assert refused.returncode == 2
    assert "2 of 3 rows are unresolved placeholders" in refused.stderr and "first: row 1" in refused.stderr
    assert not (tmp_path / "run3" / "records.jsonl").exists()
    # the exact command: resolve the cached folder into ./bench-resolved, then measure that
    (cached,) = list((datasets_cache / "speedbench-inputs" / "someorg--bench" / "placeholders").iterdir())
    out = Path.cwd() / "bench-resolved"
    assert f"speedbench resolve {cached} --out {out}, then --dataset {out}" in refused.stderr


@pytest.mark.e2e
def test_a_built_folder_pushed_to_the_hub_is_measured_from_it(tmp_path, hub, datasets_cache, monkeypatch):
    """speedbench build --push, then --dataset ORG/NAME: the same rows and fingerprint as the folder."""
    from huggingface_hub import constants

    from speedbench.dataset_builder.publish import push_dataset
    from speedbench.dataset_builder.registry import BuiltConfig
    from speedbench.dataset_builder.writer import write_dataset as write_built

    rows = [DatasetRow(category="qa", sub_category="s", turns=[f"question {i}?"], source="src", src_id=str(i))
            for i in range(4)]
    built = tmp_path / "speed-bench"
    write_built(built, [BuiltConfig("qualitative", rows)], {"seed": 0})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    push_dataset(built, "someone/speed-bench", token="t", endpoint=hub.url)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    done = _bash(fetch_command(HubDatasetId("someone/speed-bench"), "qualitative"), _env(hub, datasets_cache))
    assert done.returncode == 0, done.stderr[-3000:]
    folder = resolve_dataset("someone/speed-bench", "qualitative")
    assert [c.question_id for c in load_conversations(folder, "qualitative")] == \
        [c.question_id for c in load_conversations(built, "qualitative")]
    assert dataset_fingerprint(folder, "qualitative") == dataset_fingerprint(built, "qualitative")
    assert hub.unhandled == []


@pytest.mark.e2e
def test_the_published_fields_load_and_a_config_without_turns_is_named(tmp_path, hub, datasets_cache):
    """A config with only the published dataset's fields (no language, no license) is measured like the
    same table in a folder; one without 'turns' fails naming the field, not with a pyarrow error."""
    for config in ("published", "broken"):
        done = _bash(fetch_command(HubDatasetId(REPO), config), _env(hub, datasets_cache))
        assert done.returncode == 0, done.stderr[-3000:]
    folder = resolve_dataset(REPO, "published")
    by_hand = [("0000000000000000000000000000000a", ["Who wrote Hamlet?"]),
               ("0000000000000000000000000000000b", ["What is 2 + 2?", "And 3 + 3?"])]
    assert [(c.question_id, c.turns) for c in load_conversations(folder, "published")] == by_hand
    local = tmp_path / "local"
    (local / "data" / "published").mkdir(parents=True)
    pq.write_table(_published_table(), local / "data" / "published" / "test.parquet")
    assert dataset_fingerprint(folder, "published") == dataset_fingerprint(local, "published")
    with pytest.raises(WorkloadError, match=r"--dataset someorg/bench --config broken: the Hub config lacks "
                                            r"field\(s\) turns \(columns: question_id, category, sub_category"):
        resolve_dataset(REPO, "broken")
