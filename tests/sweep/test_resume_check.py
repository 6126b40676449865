"""A sweep folder resumed with a changed plan: run folders measured with another server command or
with other load points / sampling are refused before any server starts (the old behaviour: a
changed command reused the old records under the new command's name; changed sampling started
every server and then failed every run)."""
from __future__ import annotations

import json

import pytest

from speedbench.sweep.plan import PlanError, load_plan
from speedbench.sweep.runner import SweepRunner
from speedbench.sweep.state import SweepState
from speedbench.sweep.units import plan_units, unit_inputs
from speedbench.records import RunManifest
from tests.sweep.conftest import write_plan

SERVER = "python3 -c pass {port} --speculation draft"


def _plan(tmp_path, models_dir, dataset, *, max_tokens=8, resamples=20, command=SERVER):
    return load_plan(write_plan(tmp_path, f"""
tokenizer = "{models_dir}"
dataset = "{dataset}"
[run]
max_tokens = {max_tokens}
resamples = {resamples}
[[workload]]
config = "lite_throughput_1k"
concurrency = [1]
[[variant]]
name = "draft"
engine = "llamacpp"
method = "draft"
k = 2
command = "{command}"
"""))


def _measured_before(plan, out):
    """What an earlier invocation leaves: the run's manifest.json and the unit's state events."""
    (unit,) = plan_units(plan, out)
    unit.run_dir.mkdir(parents=True)
    options = unit.options(plan, "http://127.0.0.1:40001")
    manifest = RunManifest(
        engine=options.engine, url=options.url, model_id="m", engine_version="v", server={}, dataset_dir="d",
        dataset_config=options.config, dataset_config_sha256="s", dataset_manifest_sha256="", num_rows=6,
        tokenizer_path="t", tokenizer_sha256="s", chat_template=False, prompt_mode=options.prompt_mode,
        options=options.manifest_options(), client_version="0", python_version="3", created_unix_s=0.0)
    (unit.run_dir / "manifest.json").write_text(json.dumps(manifest.to_dict(), default=str))
    SweepState(out).add("unit_started", unit=unit.unit_id, inputs=unit_inputs(plan, unit))


def _refusal(plan, out) -> str:
    with pytest.raises(PlanError) as error:
        SweepRunner(plan, out, progress=False, log=lambda text: None).run()
    events = [json.loads(line)["event"] for line in (out / "state.jsonl").read_text().splitlines()]
    assert events == ["unit_started"]  # nothing started, not even an invocation recorded
    return str(error.value)


def test_a_run_measured_with_another_server_command_is_refused(tmp_path, models_dir, lite_dataset):
    out = tmp_path / "sweep"
    _measured_before(_plan(tmp_path, models_dir, lite_dataset), out)
    message = _refusal(_plan(tmp_path, models_dir, lite_dataset, command="python3 -c pass {port} --speculation ngram"),
                       out)
    assert f"{out / 'runs' / 'draft.lite_throughput_1k.r1'}: server command was " \
           "'python3 -c pass {port} --speculation draft', the plan now gives " \
           "'python3 -c pass {port} --speculation ngram'" in message
    assert "use a new --out folder" in message


def test_a_run_measured_with_other_sampling_is_refused_before_its_server_starts(tmp_path, models_dir, lite_dataset):
    out = tmp_path / "sweep"
    _measured_before(_plan(tmp_path, models_dir, lite_dataset), out)
    message = _refusal(_plan(tmp_path, models_dir, lite_dataset, max_tokens=16), out)
    assert f"{out / 'runs' / 'draft.lite_throughput_1k.r1'}: option sampling was " in message
    assert "'max_tokens': 8" in message and "'max_tokens': 16" in message


def test_what_does_not_change_the_measurement_may_change(tmp_path, models_dir, lite_dataset):
    from speedbench.sweep.runner import preflight

    out = tmp_path / "sweep"
    _measured_before(_plan(tmp_path, models_dir, lite_dataset), out)
    changed = _plan(tmp_path, models_dir, lite_dataset, resamples=50)  # results are computed again
    preflight(changed, plan_units(changed, out), out)
