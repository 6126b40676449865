"""The real llama.cpp server (xllamacpp) ending drafts early: ``--draft-p-min`` 0.9 (stories260K and
its Q4_0 draft, K = 4) stops a draft at the first token the draft model gives less than 0.9.

Its per-request ``timings`` give drafted and accepted totals over the decode steps, never which
step drafted how many tokens: AL must equal the server's timings exactly, and every per-position
rate must be null with the reason, from every source, never computed as if each step drafted K.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

K = 4
P_MIN = 0.9


@pytest.fixture(scope="module")
def p_min_server(models_dir):
    from speedbench.engine import EngineConfig, LocalEngine

    class PMinLlamaCpp(LocalEngine):
        """The local llama.cpp with the draft's p_min set (``speedbench serve --draft-p-min`` is another
        piece of issue 29): the same child as speedbench.engine.server_process, one attribute more."""

        def _child(self):
            _, request = super()._child()
            script = ("import json, os, sys\nimport xllamacpp as xlc\n"
                      "from speedbench.engine.server_process import build_params\n"
                      "params = build_params(json.loads(sys.stdin.readline()))\n"
                      f"params.speculative.draft.p_min = {P_MIN!r}\n"
                      "server = xlc.Server(params)\n"
                      "print(json.dumps({'url': server.listening_address}), flush=True)\n"
                      "sys.stdin.read()\nos._exit(0)\n")
            return [sys.executable, "-c", script], request

    config = EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                          draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                          speculation="draft", draft_length=K, n_parallel=4, n_ctx_per_slot=512)
    with PMinLlamaCpp(config) as engine:
        yield engine.url


@pytest.fixture(scope="module")
def p_min_run(p_min_server, models_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("p-min")
    dataset = write_dataset(root / "dataset", story_rows(5, multiturn_every=5))
    out = root / "run"
    code = run_cli("llamacpp", p_min_server, dataset, out, models_dir, "--concurrency", "1,3",
                   "--max-tokens", "64", "--warmup", "1", "--draft-length", str(K))
    assert code == 0
    records = [r for r in read_jsonl(out / "records.jsonl") if not r["warmup"]]
    assert records and all(r["error"] is None for r in records)
    return records, json.loads((out / "results.json").read_text())["points"]


def test_drafts_ended_early(p_min_run):
    records, _ = p_min_run
    # every decode step after the prefill's could have drafted K: p_min left most drafts shorter
    drafted = sum(r["engine_stats"]["raw"]["draft_n"] for r in records)
    steps = sum(len(r["chunk_tokens"]) - 1 for r in records)
    assert 0 < drafted < steps * K / 2


def test_al_equals_the_server_timings(p_min_run):
    records, points = p_min_run
    for point in points:
        mine = [r["engine_stats"]["raw"] for r in records if r["run_point"] == point["run_point"]]
        accepted = sum(t.get("draft_n_accepted", 0) for t in mine)
        decode_steps = sum(t["predicted_n"] - 1 - t.get("draft_n_accepted", 0) for t in mine)
        engine = point["acceptance"]["engine"]
        assert engine["num_decode_steps"] == decode_steps and engine["num_accepted_tokens"] == accepted
        assert engine["acceptance_length"] == pytest.approx(1 + accepted / decode_steps, rel=1e-12)
        assert engine["num_draft_tokens"] == sum(t["draft_n"] for t in mine)
        assert engine["mean_acceptance_rate"] == pytest.approx(accepted / sum(t["draft_n"] for t in mine), rel=1e-12)


def test_per_position_rates_null_with_the_reason(p_min_run):
    _, points = p_min_run
    for point in points:
        sources = point["acceptance"]
        for name in ("engine", "chunks", "counters"):
            source = sources[name]
            assert source["conditional_acceptance_rate"] is None, name
            assert source["marginal_acceptance_rate"] is None, name
            assert source["per_position_null_reason"], name
        assert "not which steps drafted" in sources["engine"]["per_position_null_reason"]
        assert "chunk sizes do not say what each step drafted" in sources["chunks"]["per_position_null_reason"]
        # the chunks never claim steps x K drafted tokens
        assert sources["chunks"]["num_draft_tokens"] is None and sources["chunks"]["mean_acceptance_rate"] is None
        assert point["variable_draft_length"] is True
        assert any(flag.startswith("variable_draft_length") for flag in point["flags"])
        # drafts that ended early and were accepted are not a drafter pinned at K + 1
        assert not any(flag.startswith("acceptance_pinned") for flag in point["flags"]), point["flags"]
        assert point["consistency"] == {}, point["consistency"]
