"""The engine registry (speedbench/engines/): one spec per engine, every engine-dependent rule read from it."""
from __future__ import annotations

import dataclasses

import pytest

from speedbench import engines, settings
from speedbench.engines.spec import CounterNames, EngineSpec


def test_names_and_their_subsets_come_from_the_specs():
    assert settings.ENGINE_NAMES == ("vllm", "sglang", "trtllm", "llamacpp", "openai")
    assert set(settings.LOCAL_ENGINES) == {"llamacpp", "vllm", "sglang"}  # what `speedbench serve` starts here
    assert set(settings.STANDIN_ENGINES) == {"vllm", "sglang", "trtllm"}  # what the stand-ins reproduce


def test_of_source_by_prefix():
    assert engines.of_source("llamacpp.timings").name == "llamacpp"
    assert engines.of_source("sglang.spec_tokens_details").name == "sglang"  # SGLang's OpenAI API source
    assert engines.of_source("nobody.metrics") is None and engines.of_source(None) is None


def test_only_llamacpp_counts_verify_steps_as_decode_steps_and_chunks_as_steps():
    rules = {n: (s.verify_steps_are_decode_steps, s.chunks_are_engine_steps) for n, s in engines.REGISTRY.items()}
    assert rules == {"vllm": (False, False), "sglang": (False, False), "trtllm": (False, False),
                     "llamacpp": (True, True), "openai": (False, False)}


def test_unknown_engine_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown engine 'x'; expected one of llamacpp, openai, sglang, trtllm, vllm"):
        engines.get("x")
    with pytest.raises(ValueError, match="registered twice"):
        engines.register(engines.get("vllm"))


@pytest.fixture
def example_engine(monkeypatch):
    """The documented example (docs/architecture.md): a generic OpenAI-compatible engine whose only
    acceptance source is its Prometheus counters, registered with one call."""
    spec = EngineSpec(name="example", label="Example", adapter="speedbench.client.engines.openai:OpenAIAdapter",
                      counters=CounterNames("example.prometheus", "example:drafts_total", drafts="example:drafts_total",
                                            draft_tokens="example:draft_tokens_total",
                                            accepted_tokens="example:accepted_tokens_total"),
                      source_flags={"counters": "example-server --metrics"})
    monkeypatch.setattr(engines, "REGISTRY", dict(engines.REGISTRY))
    engines.register(spec)
    return spec


def test_a_registered_engine_reaches_the_client_and_the_counters(example_engine):
    from speedbench.client.engines import get_adapter
    from speedbench.client.run.source_check import counter_warnings
    from speedbench.metrics.acceptance.counter_sources import counter_acceptance

    assert get_adapter("example").__name__ == "OpenAIAdapter"
    delta = {"example:drafts_total": 10.0, "example:draft_tokens_total": 40.0, "example:accepted_tokens_total": 25.0}
    got = counter_acceptance("example", delta)
    assert (got.source, got.drafts, got.draft_tokens, got.accepted_tokens) == ("example.prometheus", 10.0, 40.0, 25.0)
    assert counter_acceptance("example", {"other_total": 1.0}) is None  # no marker: no speculative counters
    snapshot = type("Snapshot", (), {"totals": {"other_total": 1.0}})()
    assert counter_warnings("example", "http://127.0.0.1:1/metrics", snapshot) == [
        "http://127.0.0.1:1/metrics has no speculative-decoding counters: the counters source is missing "
        "(if the server speculates, it needs: example-server --metrics)"]


def test_the_step_rule_follows_the_spec(monkeypatch):
    """A record whose engine counts decode steps in verify_steps: flipping the spec's property flips the
    derived step kind (by hand: 10 verify steps are 10 decode steps for llama.cpp, 10 drafted steps else)."""
    from speedbench.metrics.acceptance.steps import _verify_steps_are_decode_steps

    assert _verify_steps_are_decode_steps("llamacpp.timings") is True
    assert _verify_steps_are_decode_steps("vllm.metrics") is False
    flipped = dict(engines.REGISTRY, vllm=dataclasses.replace(engines.get("vllm"), verify_steps_are_decode_steps=True))
    monkeypatch.setattr(engines, "REGISTRY", flipped)
    assert _verify_steps_are_decode_steps("vllm.metrics") is True


def test_the_local_launcher_and_the_peer_view_are_read_from_the_spec(monkeypatch):
    """EngineConfig, LocalEngine and the peer views test no engine name: change a spec and they follow."""
    from speedbench.engine.config import EngineConfig
    from speedbench.peers import sglang_bench

    assert engines.canonical("llama.cpp") == "llamacpp" and engines.canonical("vllm") == "vllm"
    assert {n: s.launcher.speculation_modes for n, s in engines.REGISTRY.items() if s.launcher} == {
        "vllm": ("none", "draft", "ngram"), "sglang": ("none", "ngram", "draft", "draft-tree"), "llamacpp": ()}
    flipped = dict(engines.REGISTRY)
    llamacpp = flipped["llamacpp"]
    flipped["llamacpp"] = dataclasses.replace(llamacpp, launcher=dataclasses.replace(
        llamacpp.launcher, startup_timeout_s=7.0, speculation_modes=("none",)), peer_view="sglang")
    flipped["sglang"] = dataclasses.replace(flipped["sglang"], peer_view=None)
    monkeypatch.setattr(engines, "REGISTRY", flipped)
    assert EngineConfig(engine="llama.cpp", speculation="none").startup_timeout == 7.0
    with pytest.raises(ValueError, match="'draft' is not available with llama.cpp; expected one of none"):
        EngineConfig(engine="llamacpp", speculation="draft")
    assert not any("none for engine" in n for n in sglang_bench.view([], "llamacpp").notes)
    assert any("none for engine 'sglang'" in n for n in sglang_bench.view([], "sglang").notes)


def test_a_schedule_form_is_a_spec_property(monkeypatch):
    """Which engines take a draft-length schedule, the key holding it and whether it goes in a file are
    read from the specs (EngineSpec.schedule_form): a registered engine's form is used as it says."""
    from speedbench.engine.draft_schedule import parse_draft_schedule
    from speedbench.engine.schedule_forms import engine_form, schedule_engines

    assert schedule_engines() == tuple(n for n in engines.REGISTRY if n in ("vllm", "sglang", "trtllm"))
    assert engines.get("sglang").schedule_form.as_file and not engines.get("vllm").schedule_form.as_file
    spec = dataclasses.replace(engines.get("openai"), schedule_form=engines.ScheduleForm(
        writer="speedbench.engine.schedule_forms:vllm_schedule", key="num_speculative_tokens_per_batch_size"))
    monkeypatch.setattr(engines, "REGISTRY", dict(engines.REGISTRY, openai=spec))
    schedule = parse_draft_schedule("1-1:4,2-8:1")
    # vLLM's form by hand: inclusive ranges [start, end, K], the largest K allocated
    assert engine_form(schedule, "openai")["num_speculative_tokens_per_batch_size"] == [[1, 1, 4], [2, 8, 1]]
    assert "openai" in schedule_engines()
