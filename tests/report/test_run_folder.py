"""The run-folder reader on its own: what it reads, and the file it names when it cannot."""
from __future__ import annotations

import pytest

from speedbench.analysis.run_folder import RunFolderError, read_run_folder, read_run_manifest


def test_the_manifest_alone_is_the_manifest_the_folder_reader_gives(synthetic_runs):
    manifest = read_run_manifest(synthetic_runs["sd"])
    assert manifest == read_run_folder(synthetic_runs["sd"]).manifest
    # written by tests/report/conftest.py's write_run
    assert (manifest.engine, manifest.dataset_config, manifest.options) == ("llamacpp", "throughput_1k",
                                                                            {"max_tokens": 24})


def test_a_missing_or_broken_manifest_is_named(tmp_path):
    with pytest.raises(RunFolderError, match=f"{tmp_path}/manifest.json: missing"):
        read_run_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text("[1, 2]")
    with pytest.raises(RunFolderError, match=f"{tmp_path}/manifest.json: must hold a JSON object"):
        read_run_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"engine": "vllm"}')
    with pytest.raises(RunFolderError, match="manifest.json: not a run manifest"):
        read_run_manifest(tmp_path)
    with pytest.raises(RunFolderError, match=f"{tmp_path / 'nowhere'}: not a run folder"):
        read_run_folder(tmp_path / "nowhere")


def test_a_sweep_bundle_takes_its_metadata_from_the_typed_manifest(tmp_path, run_writer):
    from types import SimpleNamespace

    from speedbench.sweep.bundles import bundle_metadata

    run = run_writer(tmp_path / "sd", speculative=True)
    variant = SimpleNamespace(drafter="d", method="draft_model", engine="llamacpp", k=4)
    plan = SimpleNamespace(submission={"gpu": "cpu"})
    meta = bundle_metadata(plan, SimpleNamespace(run_dir=run, variant=variant))
    # the manifest written by tests/report/conftest.py: no sampling options, so no temperature
    assert (meta["model"], meta["engine_version"], meta["temperature"], meta["draft_length"]) == \
        ("stories260K <script>alert(1)</script>", "llama.cpp b0", None, 4)
    (run / "manifest.json").unlink()
    with pytest.raises(RunFolderError, match="manifest.json: missing"):
        bundle_metadata(plan, SimpleNamespace(run_dir=run, variant=variant))
