"""Resuming a run folder whose manifest an older speedbench wrote, before some options existed."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from speedbench.client.run.manifest import check_resume
from speedbench.client.run.options import RunConfigError, RunOptions
from speedbench.records import RunManifest


def _manifest(options: RunOptions) -> RunManifest:
    return RunManifest(engine="vllm", url="http://127.0.0.1:1", model_id=None, engine_version=None, server={},
                       dataset_dir="/d", dataset_config="qualitative", dataset_config_sha256="a" * 64,
                       dataset_manifest_sha256="", num_rows=8, tokenizer_path="/t", tokenizer_sha256="b" * 64,
                       chat_template=True, prompt_mode="chat", options=options.manifest_options(),
                       client_version="0.1.0", python_version="3.11", created_unix_s=0.0)


# The options a manifest written before bcbc744 lacked (added by issues 20 and 22).
NEWER_OPTIONS = ("api", "categories", "per_category", "chat_template_kwargs")


@pytest.fixture
def old_manifest(tmp_path):
    options = RunOptions(engine="vllm", url="http://127.0.0.1:1", tokenizer="/t", dataset="/d",
                         config="qualitative", out=str(tmp_path), limit=8, concurrency=[1, 4])
    written = _manifest(options).to_dict()
    for key in NEWER_OPTIONS:
        del written["options"][key]
    del written["options"]["sampling"]["seed_per_prompt"]  # added by issue 33, inside a nested option
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(written))
    return path, options


def test_an_older_manifest_resumes_when_the_new_options_keep_their_defaults(old_manifest):
    path, options = old_manifest
    assert not set(NEWER_OPTIONS) & set(json.loads(path.read_text())["options"])
    assert "seed_per_prompt" not in json.loads(path.read_text())["options"]["sampling"]
    check_resume(path, _manifest(options))  # no error: the older run ran with what are now the defaults


@pytest.mark.parametrize("change, key", [({"categories": ["qa"]}, "categories"), ({"api": "openai"}, "api"),
                                         ({"per_category": 2}, "per_category"),
                                         ({"chat_template_kwargs": {"enable_thinking": False}}, "chat_template_kwargs")])
def test_an_older_manifest_refuses_a_new_option_set_otherwise(old_manifest, change, key):
    path, options = old_manifest
    with pytest.raises(RunConfigError, match=rf"option {key} differs"):
        check_resume(path, _manifest(replace(options, **change)))


def test_an_option_the_old_run_recorded_is_still_compared(old_manifest):
    path, options = old_manifest
    with pytest.raises(RunConfigError, match=r"option limit differs \(was 8, now 9\)"):
        check_resume(path, _manifest(replace(options, limit=9)))


def test_a_nested_option_added_since_is_compared_with_its_default(old_manifest):
    from speedbench.client.engines.base import SamplingOptions

    path, options = old_manifest
    with pytest.raises(RunConfigError, match=r"option sampling differs"):
        check_resume(path, _manifest(replace(options, sampling=SamplingOptions(seed_per_prompt=True))))
