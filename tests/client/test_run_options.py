"""``speedbench run``'s options are declared once (client/run/options.py); the parser, the
manifest, the resume check and the workers' settings are derived from that declaration."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from speedbench.cli import build_parser
from speedbench.client.engines.base import SamplingOptions
from speedbench.client.execution.phase import ClientSettings
from speedbench.client.run.options import RESUME_OPTIONS, RunOptions
from speedbench.options import option

REQUIRED = ["--engine", "vllm", "--url", "http://h:1", "--tokenizer", "tok", "--dataset", "ds", "--config", "cfg",
            "--out", "o"]


def parse(argv: list[str]) -> RunOptions:
    return RunOptions.from_args(build_parser().parse_args(["run", *argv]))


def test_every_flag_reaches_its_field():
    argv = REQUIRED + [
        "--model", "m", "--prompt-mode", "completion", "--max-tokens", "7", "--temperature", "0.5", "--ignore-eos",
        "--seed", "3", "--top-p", "0.9", "--extra-body", '{"top_k": 1}', "--request-timeout", "9",
        "--read-timeout", "8", "--max-errors", "5", "--limit", "4", "--online", "--concurrency", "1,3",
        "--chat-template-kwargs", '{"enable_thinking": false}', "--api", "openai", "--categories", "coding,math",
        "--per-category", "2",
        "--request-rate", "0.5,2", "--arrival-seed", "11", "--warmup", "2", "--workers", "3", "--ray", "auto",
        "--draft-length", "4", "--tolerance", "0.1", "--resamples", "50", "--no-progress"]
    assert parse(argv) == RunOptions(
        engine="vllm", url="http://h:1", tokenizer="tok", dataset="ds", config="cfg", out="o", model="m",
        prompt_mode="completion",
        sampling=SamplingOptions(max_tokens=7, temperature=0.5, ignore_eos=True, seed=3, top_p=0.9),
        extra_body={"top_k": 1}, request_timeout_s=9.0, read_timeout_s=8.0, max_errors=5, limit=4, online=True,
        concurrency=[1, 3], request_rates=[0.5, 2.0], arrival_seed=11, warmup=2, workers=3, ray="auto",
        draft_length=4, agreement_tolerance=0.1, num_resamples=50, progress=False,
        chat_template_kwargs={"enable_thinking": False}, api="openai", categories=["coding", "math"], per_category=2)


def test_flags_not_given_keep_the_declared_defaults():
    assert parse(REQUIRED) == RunOptions(engine="vllm", url="http://h:1", tokenizer="tok", dataset="ds",
                                         config="cfg", out="o")
    defaults = parse(REQUIRED)
    assert (defaults.concurrency, defaults.sampling.max_tokens, defaults.agreement_tolerance,
            defaults.num_resamples, defaults.progress) == ([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], 4096, 0.02, 1000,
                                                           True)


def test_a_missing_required_flag_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", *REQUIRED[:-2]])
    assert "--out" in capsys.readouterr().err


def test_the_manifest_records_what_it_recorded_before_the_declaration():
    options = RunOptions(engine="vllm", url="u", tokenizer="t", dataset="d", config="c", out="o", limit=3,
                         request_rates=[1.5], model="m", extra_body={"a": 1}, draft_length=2, ray="auto")
    assert options.manifest_options() == {
        "sampling": {"max_tokens": 4096, "temperature": 0.0, "ignore_eos": False, "seed": 0, "top_p": None,
                     "seed_per_prompt": False},  # seed_per_prompt: added since (issue 33)
        "limit": 3, "load_shape": "open", "points": ["r1.5"], "concurrency": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        "request_rates": [1.5], "arrival_seed": 0, "warmup": 0, "workers": 1, "ray": "auto", "max_errors": 20,
        "request_timeout_s": 3600.0, "read_timeout_s": 300.0, "extra_body": {"a": 1}, "model": "m",
        "agreement_tolerance": 0.02, "draft_length": 2, "num_resamples": 1000,
        # added since (issues 20 and 22)
        "chat_template_kwargs": {}, "api": "native", "categories": None, "per_category": None}


def test_resume_compares_the_options_that_change_what_is_measured():
    assert sorted(RESUME_OPTIONS) == sorted(("sampling", "limit", "load_shape", "points", "warmup", "extra_body",
                                              "model", "chat_template_kwargs", "api", "categories", "per_category"))


def test_workers_get_the_request_options_and_the_records_file():
    options = RunOptions(engine="sglang", url="u", tokenizer="t", dataset="d", config="c", out="runs/x",
                         model="m", max_errors=4, sampling=SamplingOptions(max_tokens=9))
    assert options.client_settings() == ClientSettings(
        engine="sglang", url="u", tokenizer="t", model="m", sampling=SamplingOptions(max_tokens=9), max_errors=4,
        records_path="runs/x/records.jsonl")


def test_a_new_field_is_a_flag_a_manifest_entry_and_a_resume_key():
    """How an option is added: one field; nothing else to edit."""

    @dataclass(kw_only=True)
    class Extended(RunOptions):
        shots: int | None = option("--shots", default=None, parse=int, recorded=True, resume=True,
                                   help="examples per prompt")

    parser = argparse.ArgumentParser()
    Extended.add_arguments(parser)
    options = Extended.from_args(parser.parse_args(REQUIRED + ["--shots", "5"]))
    assert options.shots == 5 and options.manifest_options()["shots"] == 5
    assert "--shots SHOTS examples per prompt" in " ".join(parser.format_help().split())
    from speedbench.options import resume_names

    assert "shots" in resume_names(Extended)
