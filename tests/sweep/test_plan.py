"""Plan files: expansion, and every refusal naming the file, line and key before anything starts."""
from __future__ import annotations

import textwrap

import pytest

from speedbench.sweep.locate import KeyLines
from speedbench.sweep.plan import PlanError, load_plan
from tests.sweep.conftest import write_plan

HEAD = """\
title = "t"
tokenizer = "tok"
dataset = "ds"

[run]
warmup = 1
max_tokens = 16

[[workload]]
config = "lite_qualitative"
concurrency = [1, 4]
"""

VARIANTS = """
[[variant]]
name = "eagle-k{k}"
engine = "vllm"
method = "eagle3"
k = [2, 3, 5]
baseline = "ar"
command = "python3 -c pass --port {port} --speculative-config '{\\"num_speculative_tokens\\": {k}}'"

[[variant]]
name = "ar"
engine = "vllm"
command = "python3 -c pass --port {port}"
"""


def _plan(tmp_path, text: str):
    return load_plan(write_plan(tmp_path, text))


def _refused(tmp_path, text: str) -> str:
    with pytest.raises(PlanError) as error:
        _plan(tmp_path, text)
    return str(error.value)


def test_k_list_expands_into_variants_with_k_filled(tmp_path):
    plan = _plan(tmp_path, HEAD + VARIANTS)
    assert [(v.name, v.k, v.speculative, v.baseline) for v in plan.variants] == [
        ("eagle-k2", 2, True, "ar"), ("eagle-k3", 3, True, "ar"), ("eagle-k5", 5, True, "ar"), ("ar", 0, False, None)]
    # {k} filled now, {port} when the server starts; other braces (JSON) left alone
    assert plan.variants[1].command == ("python3 -c pass --port {port} --speculative-config "
                                        "'{\"num_speculative_tokens\": 3}'")
    assert plan.workloads[0].run == {"concurrency": [1, 4]} and plan.run == {"warmup": 1, "max_tokens": 16}


def test_unknown_key_names_its_line_and_a_close_match(tmp_path):
    text = HEAD + VARIANTS.replace('baseline = "ar"', 'baseline = "ar"\ncomand = "x"')
    message = _refused(tmp_path, text)
    line = text.splitlines().index('comand = "x"') + 1
    assert f"plan.toml:{line}: unknown key 'variant[0].comand'" in message
    assert "did you mean 'command'" in message


def test_wrong_type_names_its_line(tmp_path):
    text = HEAD + VARIANTS.replace('engine = "vllm"\nmethod', 'engine = "vllm"\ngpus = "eight"\nmethod')
    message = _refused(tmp_path, text)
    line = text.splitlines().index('gpus = "eight"') + 1
    assert f"plan.toml:{line}: variant[0].gpus" in message and "'eight'" in message


def test_run_options_are_checked_by_speedbench_runs_parser(tmp_path):
    bad_value = HEAD.replace("max_tokens = 16", 'max_tokens = "many"') + VARIANTS
    line = bad_value.splitlines().index('max_tokens = "many"') + 1
    assert f"plan.toml:{line}: run.max_tokens: expected an integer" in _refused(tmp_path, bad_value)
    unknown = HEAD.replace("concurrency = [1, 4]", "concurency = [1, 4]") + VARIANTS
    line = unknown.splitlines().index("concurency = [1, 4]") + 1
    message = _refused(tmp_path, unknown)
    assert f"plan.toml:{line}: workload[0].concurency: not an option of `speedbench run`" in message
    refused_by_parser = HEAD.replace("concurrency = [1, 4]", "concurrency = [1, 0]") + VARIANTS
    line = refused_by_parser.splitlines().index("concurrency = [1, 0]") + 1
    assert f"plan.toml:{line}: workload[0].concurrency: argument --concurrency" in _refused(tmp_path, refused_by_parser)
    set_by_sweep = HEAD.replace("warmup = 1", 'url = "http://x"') + VARIANTS
    assert "run.url: set by the sweep" in _refused(tmp_path, set_by_sweep)


def test_two_variants_on_one_port_are_refused(tmp_path):
    fixed = VARIANTS.replace("--port {port} --spec", "--port 8000 --spec").replace('k = [2, 3, 5]', 'k = [2, 3, 5]\nport = 8000')
    message = _refused(tmp_path, HEAD + fixed)
    assert "'eagle-k2' and 'eagle-k3' are both on localhost:8000" in message
    same = HEAD + VARIANTS.replace('k = [2, 3, 5]', 'k = 2').replace("eagle-k{k}", "eagle") \
        + '\n[[variant]]\nname = "other"\nengine = "vllm"\nurl = "http://127.0.0.1:9000"\n' \
        + '\n[[variant]]\nname = "other2"\nengine = "vllm"\nurl = "http://localhost:9000/"\n'
    assert "'other' and 'other2' are both on" in _refused(tmp_path, same)


def test_baseline_must_name_a_variant_without_speculation(tmp_path):
    text = HEAD + VARIANTS.replace('baseline = "ar"', 'baseline = "autoregressive"')
    line = text.splitlines().index('baseline = "autoregressive"') + 1
    message = _refused(tmp_path, text)
    assert f"plan.toml:{line}: variant 'eagle-k2': baseline 'autoregressive' names no variant" in message
    assert "those are: ar" in message
    to_sd = HEAD + VARIANTS.replace('baseline = "ar"', 'baseline = "eagle-k3"')
    assert "baseline 'eagle-k3' names no variant without speculation" in _refused(tmp_path, to_sd)


def test_command_not_found_is_refused(tmp_path):
    text = HEAD + VARIANTS.replace('command = "python3 -c pass --port {port}"', 'command = "no-such-server-xyz --port {port}"')
    line = text.splitlines().index('command = "no-such-server-xyz --port {port}"') + 1
    assert f"plan.toml:{line}: variant 'ar': command not found: 'no-such-server-xyz'" in _refused(tmp_path, text)


def test_other_refusals(tmp_path):
    assert "needs {k}" in _refused(tmp_path, HEAD + VARIANTS.replace("eagle-k{k}", "eagle"))
    assert "needs k = a draft length" in _refused(tmp_path, HEAD + VARIANTS.replace("k = [2, 3, 5]\n", ""))
    no_port = HEAD + VARIANTS.replace('"python3 -c pass --port {port}"', '"python3 -c pass"')
    assert "no {port} in it and no port" in _refused(tmp_path, no_port)
    assert "not valid TOML" in _refused(tmp_path, HEAD + "x = = 1\n" + VARIANTS)
    assert "ENGINE_NOT_SET_XYZ" in _refused(tmp_path, HEAD.replace('"tok"', '"${ENGINE_NOT_SET_XYZ}"') + VARIANTS)
    assert "variant[1].engine: 'tgi' is not one of" in _refused(tmp_path, HEAD + VARIANTS.replace(
        'name = "ar"\nengine = "vllm"', 'name = "ar"\nengine = "tgi"'))


def test_environment_variables_fill_strings(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_MODELS", "/models/x")
    plan = _plan(tmp_path, HEAD.replace('"tok"', '"${SWEEP_TEST_MODELS}"').replace('"ds"', '"${SWEEP_TEST_NONE:-d2}"')
                 + VARIANTS)
    assert plan.tokenizer == "/models/x" and plan.workloads[0].dataset == "d2"


def test_key_lines_follow_toml_structure():
    text = textwrap.dedent('''\
        a = 1                       # line 1
        s = """multi
        line = 3 not a key"""
        [t]
        "quoted.key" = 2            # line 5
        arr = [
          1,
          { x = 1, y = [2,
                3] },             # line 9 closes the inline table
        ]
        [[v]]
        n = 1                       # line 12
        [v.run]
        m = 2                       # line 14
        [[v]]
        n = 2                       # line 16
        d.e = 3                     # line 17
        ''')
    lines = KeyLines(text)
    assert lines.line(("a",)) == 1 and lines.line(("t", "quoted.key")) == 5
    assert lines.line(("t", "arr", 1, "y")) == 8 and lines.line(("t", "arr", 0)) == 7
    assert lines.line(("v", 0, "n")) == 12 and lines.line(("v", 0, "run", "m")) == 14
    assert lines.line(("v", 1, "n")) == 16 and lines.line(("v", 1, "d", "e")) == 17
    assert lines.line(("v", 1, "missing")) == 15  # the nearest ancestor written: the [[v]] header
    assert ("line",) not in lines.lines and ("s",) in lines.lines


def test_a_unit_is_the_same_measurement_while_its_inputs_are(tmp_path):
    from speedbench.sweep.units import plan_units, unit_sha256

    def shas(text):
        plan = _plan(tmp_path, text)
        return {u.unit_id: unit_sha256(plan, u) for u in plan_units(plan, tmp_path)}

    base = shas(HEAD + VARIANTS)
    assert shas(HEAD.replace('title = "t"', 'title = "renamed"') + VARIANTS) == base
    changed = shas(HEAD.replace("max_tokens = 16", "max_tokens = 32") + VARIANTS)
    assert set(changed) == set(base) and all(changed[u] != base[u] for u in base)
    # another draft length is another unit; the baseline's inputs do not change with it
    more = shas(HEAD + VARIANTS.replace("k = [2, 3, 5]", "k = [2, 3, 5, 6]"))
    assert {u: more[u] for u in base} == base and "eagle-k6.lite_qualitative.r1" in more
