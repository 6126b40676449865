"""The evaluate modules load offline (both path forms), keep their interface, reject bad input,
and their documented examples run."""
import doctest

import numpy as np
import pytest

MODULES = ["speedbench_al", "speedbench_speedup", "speedbench_latency"]


@pytest.fixture(scope="module")
def evaluate():
    # imported here, after the session fixture set HF_HOME: evaluate reads it at import time
    import evaluate as _evaluate

    return _evaluate


@pytest.fixture
def at_repo_root(monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    return repo_root


@pytest.mark.parametrize("name", MODULES)
def test_load_from_repo_root_and_from_inside_metrics(evaluate, name, monkeypatch, repo_root):
    monkeypatch.chdir(repo_root)
    from_root = evaluate.load(f"metrics/{name}")
    monkeypatch.chdir(repo_root / "metrics")
    from_inside = evaluate.load(name)
    assert type(from_root).__name__ == type(from_inside).__name__
    assert "2604.09557" in from_root.citation


@pytest.mark.parametrize("name", MODULES)
def test_documented_examples_run(evaluate, name, at_repo_root):
    module = evaluate.load(f"metrics/{name}")
    parser = doctest.DocTestParser()
    test = parser.get_doctest(module.inputs_description, {}, name, None, 0)
    assert test.examples, "no runnable examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0


def test_al_interface(evaluate, at_repo_root, simulate):
    run = simulate([0.8, 0.6, 0.5], num_requests=40, steps_per_request=12, seed=5)
    cats = ["math", "code"] * 20
    result = evaluate.load("metrics/speedbench_al").compute(step_sizes=run.chunks, categories=cats, draft_length=3)
    for key in ("acceptance_length", "acceptance_length_request_weighted"):
        assert isinstance(result[key], float)
    low, high = result["acceptance_length_ci"]
    assert low <= result["acceptance_length"] <= high
    assert len(result["conditional_acceptance_rate"]) == 3
    assert len(result["marginal_acceptance_rate"]) == 3
    assert set(result["per_category"]) == {"code", "math"}
    for cat in result["per_category"].values():
        assert len(cat["acceptance_length_ci"]) == 2 and len(cat["conditional_acceptance_rate"]) == 3
    # the step-weighted AL equals the pooled mean step size after trimming, computed independently
    steps = np.concatenate([c[1:-1] for c in run.chunks])
    assert result["acceptance_length"] == pytest.approx(steps.mean())


def test_al_rejects_floats_instead_of_truncating(evaluate, at_repo_root):
    al = evaluate.load("metrics/speedbench_al")
    with pytest.raises(ValueError, match=r"step_sizes: expected integers, got 2.5 at row 1, position 2"):
        al.compute(step_sizes=[[1, 3, 1], [1, 2, 2.5, 1]], categories=["a", "b"], draft_length=3)
    with pytest.raises(ValueError, match="non-integer"):
        al.add_batch(step_sizes=[[1, 3.2, 1]], categories=["a"])
    counts = evaluate.load("metrics/speedbench_al", "counts")
    with pytest.raises(ValueError, match="accepted"):
        counts.compute(steps=[4], accepted=[3.5], draft_length=3)


def test_al_input_forms_agree_through_evaluate(evaluate, at_repo_root, simulate):
    run = simulate([0.7, 0.5, 0.4], num_requests=30, steps_per_request=15, seed=9)
    k = run.draft_length
    by_steps = evaluate.load("metrics/speedbench_al").compute(step_sizes=run.chunks, draft_length=k)
    hist = [np.bincount(a, minlength=k + 1).tolist() for a in run.accepted]
    by_hist = evaluate.load("metrics/speedbench_al", "histograms").compute(histograms=hist)
    by_counts = evaluate.load("metrics/speedbench_al", "counts").compute(
        steps=[a.size for a in run.accepted], accepted=[int(a.sum()) for a in run.accepted], draft_length=k
    )
    all_acc = np.concatenate(run.accepted)
    by_counters = evaluate.load("metrics/speedbench_al", "counters").compute(
        num_drafts=[all_acc.size], num_draft_tokens=[all_acc.size * k], num_accepted_tokens=[int(all_acc.sum())],
        accepted_per_position=[[int((all_acc >= i).sum()) for i in range(1, k + 1)]],
    )
    for other in (by_hist, by_counts, by_counters):
        assert other["acceptance_length"] == pytest.approx(by_steps["acceptance_length"])
    assert by_hist["acceptance_length_ci"] == pytest.approx(by_steps["acceptance_length_ci"])
    assert by_counters["conditional_acceptance_rate"] == pytest.approx(by_steps["conditional_acceptance_rate"])


def test_al_batches_accumulate(evaluate, at_repo_root):
    al = evaluate.load("metrics/speedbench_al")
    al.add_batch(step_sizes=[[1, 3, 2, 4, 1]], categories=["math"])
    al.add(step_sizes=[1, 4, 4, 2, 2], categories="code")
    result = al.compute(draft_length=3)
    assert result["acceptance_length"] == pytest.approx(19 / 6)
    assert set(result["per_category"]) == {"code", "math"}


def test_al_options_reach_the_core(evaluate, at_repo_root):
    al = evaluate.load("metrics/speedbench_al")
    result = al.compute(
        step_sizes=[[1, 3, 3, 1], [1, 2, 2, 2]], finish_reasons=["stop", "length"], draft_length=3,
        last_chunk="keep", num_resamples=10,
    )
    assert result["num_max_tokens_requests"] == 1
    assert result["trim_rules"]["last_chunk"] == "keep"
    assert result["num_steps"] == 6


def test_unknown_config_is_refused(evaluate, at_repo_root):
    with pytest.raises(ValueError, match="unknown config"):
        evaluate.load("metrics/speedbench_al", "bogus")


def test_speedup_and_latency_modules(evaluate, at_repo_root):
    s = evaluate.load("metrics/speedbench_speedup").compute(t_ar=[0.01, 0.01], t_sd=[0.02], acceptance_length=2.5)
    assert s["speedup_estimate"] == pytest.approx(1.25)
    with pytest.raises(ValueError, match="t_sd"):
        evaluate.load("metrics/speedbench_speedup").compute(t_ar=[0.01], t_sd=[float("nan")], acceptance_length=2.5)
    lat = evaluate.load("metrics/speedbench_latency").compute(
        send_times=[0.0, 0.5], chunk_times=[[0.2, 0.3, 0.5], [0.9, 1.0]], chunk_tokens=[[1, 2, 3], [1, 1]],
        categories=["a", "b"], requested_concurrency=2,
    )
    assert lat["output_tps"] == pytest.approx(8.0)
    assert lat["per_category"]["b"]["ttft"]["mean"] == pytest.approx(0.4)


@pytest.mark.parametrize("name", MODULES)
def test_metric_card_examples_run(evaluate, name, at_repo_root):
    card = (at_repo_root / "metrics" / name / "README.md").read_text()
    assert card.startswith("---\n") and "\ntags:\n- evaluate\n- metric\n" in card.split("\n---\n")[0]
    globs = {
        "evaluate": evaluate,
        "speedup": evaluate.load("metrics/speedbench_speedup"),
        "latency": evaluate.load("metrics/speedbench_latency"),
    }
    # a closing code fence right after an expected output would be read as part of it
    text = "\n".join("" if line.startswith("```") else line for line in card.splitlines())
    test = doctest.DocTestParser().get_doctest(text, globs, f"{name}/README.md", None, 0)
    assert test.examples
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.failures == 0


def test_usage_only_chunk_is_dropped_by_latency_and_al_alike(evaluate, at_repo_root):
    # chunks 1, 4, 3, 4 at 0.10..0.16 s and a usage-only event (0 tokens) at 0.21 s
    lat = evaluate.load("metrics/speedbench_latency").compute(
        send_times=[0.0], chunk_times=[[0.10, 0.12, 0.14, 0.16, 0.21]], chunk_tokens=[[1, 4, 3, 4, 0]],
    )
    assert lat["e2e"]["mean"] == pytest.approx(0.16)
    assert lat["user_tps"]["mean"] == pytest.approx(11 / 0.06)
    assert lat["tokens_per_step"]["mean"] == pytest.approx(11 / 3)
    al = evaluate.load("metrics/speedbench_al").compute(
        step_sizes=[[1, 4, 3, 4, 0]], draft_length=3, last_chunk="keep", num_resamples=10
    )
    # the same three steps (lone first token dropped): AL = 11 / 3
    assert al["num_steps"] == 3
    assert al["acceptance_length"] == pytest.approx(11 / 3)


def test_al_per_step_form_with_variable_k(evaluate, at_repo_root):
    """Steps (drafted, accepted): (4,4) (4,1) | (1,1) (1,0) (2,2); counted by hand in
    tests/metrics/test_variable_draft_length.py: AR = [4/5, 2/3, 1, 1]."""
    per_step = evaluate.load("metrics/speedbench_al", "per_step")
    result = per_step.compute(per_step_drafted=[[4, 4], [1, 1, 2]], per_step_accepted=[[4, 1], [1, 0, 2]],
                              categories=["code", "math"], draft_length=4, num_resamples=20)
    assert result["conditional_acceptance_rate"] == pytest.approx([4 / 5, 2 / 3, 1.0, 1.0])
    assert result["acceptance_length"] == pytest.approx(1 + 8 / 5)
    assert result["mean_acceptance_rate"] == pytest.approx(8 / 12)
    assert result["draft_length_histogram"] == {"1": 2, "2": 1, "4": 2} and result["variable_draft_length"]
    assert result["per_category"]["math"]["draft_length_histogram"] == {"1": 2, "2": 1}
    with pytest.raises(ValueError, match="row 1"):
        per_step.compute(per_step_drafted=[[4], [1]], per_step_accepted=[[4], [2]], draft_length=4)
    # counts only, fewer drafted than steps x K: no per-position rates, the reason given
    counts = evaluate.load("metrics/speedbench_al", "counts").compute(
        steps=[2, 3], accepted=[5, 3], drafted=[8, 4], draft_length=4, num_resamples=0)
    assert counts["conditional_acceptance_rate"] is None and counts["variable_draft_length"] is True
    assert "fewer than steps x K = 20" in counts["per_position_null_reason"]
    counters = evaluate.load("metrics/speedbench_al", "counters").compute(
        num_drafts=[5], num_draft_tokens=[12], num_accepted_tokens=[8], accepted_per_position=[[4, 2, 1, 1]],
        draft_length=4)
    assert counters["conditional_acceptance_rate"] is None and counters["per_position_null_reason"]
