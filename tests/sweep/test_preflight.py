"""What the sweep checks before any server starts, as `speedbench run` would: the tokenizer may be a
Hub model id (read from the local Hugging Face cache), as `speedbench run --tokenizer` takes it."""
from __future__ import annotations

import shutil

import pytest

from speedbench.sweep.plan import PlanError, load_plan
from speedbench.sweep.runner import preflight
from speedbench.sweep.units import plan_units
from tests.sweep.conftest import write_plan


def _plan(tmp_path, tokenizer, dataset):
    plan = load_plan(write_plan(tmp_path, f"""
tokenizer = "{tokenizer}"
dataset = "{dataset}"
[[workload]]
config = "lite_throughput_1k"
concurrency = [1]
[[variant]]
name = "ar"
engine = "llamacpp"
command = "python3 -c pass {{port}}"
"""))
    return plan, plan_units(plan, tmp_path / "out")


def _hub_cache(root, repo_id, models_dir, commit="0123456789abcdef0123456789abcdef01234567"):
    """The Hugging Face cache layout (models--ORG--NAME/refs/main, snapshots/<commit>/...), by hand."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(models_dir / name, snapshot / name)


def test_a_hub_model_id_as_the_tokenizer(tmp_path, models_dir, lite_dataset, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    _hub_cache(tmp_path / "hub", "karpathy/stories260K", models_dir)
    plan, units = _plan(tmp_path, "karpathy/stories260K", lite_dataset)
    preflight(plan, units, tmp_path / "out")  # was refused: "no tokenizer.json in 'karpathy/stories260K'"
    plan, units = _plan(tmp_path, "someone/missing", lite_dataset)
    with pytest.raises(PlanError, match=r"plan.toml: tokenizer: --tokenizer someone/missing: not in the local "
                                        r"Hugging Face cache"):
        preflight(plan, units, tmp_path / "out")
    plan, units = _plan(tmp_path, tmp_path / "no-such-folder", lite_dataset)
    with pytest.raises(PlanError, match="plan.toml: tokenizer: .*neither a folder nor a Hub model id"):
        preflight(plan, units, tmp_path / "out")
