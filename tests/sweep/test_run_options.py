"""The sweep builds a unit's RunOptions exactly as `speedbench run` does from the same arguments."""
from __future__ import annotations

from speedbench.cli import main
from speedbench.sweep.plan import load_plan
from speedbench.sweep.units import plan_units
from tests.sweep.conftest import write_plan

PLAN = """\
tokenizer = "{tok}"
dataset = "ds"
[run]
warmup = 2
max_tokens = 64
ignore_eos = true
extra_body = {{ top_k = 1 }}
[[workload]]
config = "throughput_1k"
request_rate = [0.5, 2]
repeats = 2
[[variant]]
name = "ngram-k{{k}}"
engine = "vllm"
method = "ngram"
k = [3]
baseline = "ar"
url = "http://127.0.0.1:8123"
run = {{ model = "m", workers = 2 }}
[[variant]]
name = "ar"
engine = "vllm"
url = "http://127.0.0.1:8124"
"""


def test_unit_options_equal_speedbench_runs_own(tmp_path, models_dir, monkeypatch):
    plan = load_plan(write_plan(tmp_path, PLAN.format(tok=models_dir)))
    units = plan_units(plan, tmp_path / "out")
    assert [u.unit_id for u in units] == ["ngram-k3.throughput_1k.r1", "ngram-k3.throughput_1k.r2",
                                          "ar.throughput_1k.r1", "ar.throughput_1k.r2"]
    ours = units[0].options(plan, "http://127.0.0.1:8123")
    captured = {}

    def fake_execute_run(options, log=print):
        captured["options"] = options
        raise KeyboardInterrupt  # stop before anything is sent

    monkeypatch.setattr("speedbench.client.run.runner.execute_run", fake_execute_run)
    main(["run", "--engine", "vllm", "--url", "http://127.0.0.1:8123", "--tokenizer", str(models_dir),
          "--dataset", "ds", "--config", "throughput_1k", "--out", str(units[0].run_dir), "--warmup", "2",
          "--max-tokens", "64", "--ignore-eos", "--extra-body", '{"top_k": 1}', "--request-rate", "0.5,2",
          "--model", "m", "--workers", "2", "--draft-length", "3"])
    assert ours == captured["options"]
    assert [p[0] for p in ours.points()] == ["r0.5", "r2"]
    assert units[2].options(plan, "u").draft_length == 0  # a baseline tells the client: no speculation
