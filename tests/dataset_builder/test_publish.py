"""--push uploads the dataset folder through huggingface_hub to a local stand-in of the Hub API."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from speedbench.dataset_builder.publish import push_dataset
from speedbench.dataset_builder.registry import BuiltConfig
from speedbench.dataset_builder.writer import write_dataset
from speedbench.schema import DatasetRow

_spec = importlib.util.spec_from_file_location("hub_standin", Path(__file__).with_name("hub_standin.py"))
hub_standin = importlib.util.module_from_spec(_spec)
sys.modules["hub_standin"] = hub_standin
_spec.loader.exec_module(hub_standin)


online_hub = hub_standin.online_hub  # the fixture, shared with the other Hub tests


def _folder(tmp_path: Path) -> Path:
    rows = [DatasetRow(category="qa", sub_category="s", turns=[f"question {i}?"], source="src", src_id=str(i))
            for i in range(3)]
    out = tmp_path / "speed-bench"
    write_dataset(out, [BuiltConfig("qualitative", rows)], {"seed": 0})
    (out / "reports").mkdir()
    (out / "reports" / "diversity.md").write_text("table\n")
    return out


def test_push_uploads_every_file_byte_for_byte(tmp_path, online_hub):
    folder = _folder(tmp_path)
    url = push_dataset(folder, "someone/speed-bench", token="hf_test_token")
    assert url.startswith(online_hub.url + "/datasets/someone/speed-bench/commit/")
    uploaded = online_hub.repos["someone/speed-bench"]
    local = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert uploaded == local
    assert set(local) >= {"README.md", "manifest.json", "data/qualitative/test-00000-of-00001.parquet",
                          "reports/diversity.md"}
    assert online_hub.created[0]["type"] == "dataset" and online_hub.created[0]["name"] == "speed-bench"
    assert online_hub.unhandled == []
    assert online_hub.validated and "config_name: qualitative" in online_hub.validated[0]["content"]


def test_push_to_existing_repo_and_refusals(tmp_path, online_hub):
    folder = _folder(tmp_path)
    push_dataset(folder, "someone/speed-bench", token="t")
    push_dataset(folder, "someone/speed-bench", token="t")   # exist_ok: second push commits again
    assert sum(r.endswith("/commit/main") for r in online_hub.requests) == 2
    with pytest.raises(ValueError, match="not a built dataset folder"):
        push_dataset(tmp_path / "empty", "someone/x", token="t")


def test_push_refuses_in_offline_mode(tmp_path):
    from huggingface_hub import constants

    if not constants.HF_HUB_OFFLINE:
        pytest.skip("HF_HUB_OFFLINE not set for this session")
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE"):
        push_dataset(_folder(tmp_path), "someone/x", token="t")


def test_online_sources_are_read_from_the_hub_at_the_pinned_revision(tmp_path, online_hub):
    """--online: RoleBench at its pinned commit, CoSER at main resolved once; same parser as the mirror."""
    import json

    from speedbench.dataset_builder.sources import SourceFiles, adapter

    rolebench = adapter("rolebench")
    pinned = rolebench.HUB.revision
    line = json.dumps({"role": "Sherlock Holmes", "question": "What do you deduce from my boots?"}) + "\n"
    online_hub.hosted["ZenMoore/RoleBench"] = {"sha": pinned, "files": {
        hub_path: line.encode() for hub_path, _, _ in rolebench.FILES.values()}}
    files = SourceFiles(tmp_path / "no-mirror", online=True)
    rows = rolebench.candidates(files)
    assert len(rows) == 3 and rows[0].turns[0].endswith("What do you deduce from my boots?")
    assert files.resolved_revisions == {"ZenMoore/RoleBench": pinned}
    assert {(repo, rev) for repo, rev, _ in online_hub.downloads} == {("ZenMoore/RoleBench", pinned)}

    coser = adapter("coser")
    scene = [{"book": "Pride and Prejudice", "scenario": "A ball at Netherfield.", "major_characters": ["Mr Darcy"],
              "character_profiles": {}, "dialogues": [
                  {"character": "Elizabeth Bennet", "message": "[I dislike him.] Do you dance, Mr Darcy?"},
                  {"character": "Mr Darcy", "message": "Not if I can help it."}]}]
    online_hub.hosted["Neph0s/CoSER"] = {"sha": "c" * 40, "files": {"test/test_set.json": json.dumps(scene).encode()}}
    rows = coser.candidates(files)
    assert rows[0].turns[0].endswith("Elizabeth Bennet: Do you dance, Mr Darcy?")
    assert files.resolved_revisions["Neph0s/CoSER"] == "c" * 40
