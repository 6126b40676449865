"""Faults injected between `speedbench run` and the real llama.cpp server (xllamacpp, stories260K,
draft K = 3) by a proxy (tests/faults/proxy.py), each at a planned generation request.

For every fault: no success record holds tokens other than a clean run's (a cut or altered stream
is never a success), the failures are recorded by kind, and one `--retry-errors` resume ends with
every request-turn measured once (live), token-identical to the clean run at concurrency 1, with
the same acceptance length and full coverage; the failed records stay in records.jsonl,
superseded.

The dataset's 8 rows hold 12 request-turns (rows 3 and 7 have three turns), sent one at a time in
file order: generation request 0 is row 0, 3-5 are row 3's turns, 6 is row 4, and so on; a client
retry of a connection reset before any byte takes the next index.
"""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.faults.proxy import Fault, FaultProxy
from tests.standins.fixtures import read_jsonl, run_cli, story_rows, write_dataset

ROWS = story_rows(8, multiturn_every=4)
TURNS = [(r.question_id, t) for r in ROWS for t in range(len(r.turns))]
OPTIONS = ("--concurrency", "1", "--max-tokens", "48", "--draft-length", "3", "--max-errors", "1000")


def _config(models_dir: Path):
    from speedbench.engine import EngineConfig

    return EngineConfig(target=str(models_dir / "stories260K-f32.gguf"),
                        draft=str(models_dir / "stories260K-draft-q4_0.gguf"),
                        speculation="draft", draft_length=3, n_parallel=1, n_ctx_per_slot=1024)


class Server:
    """A llama.cpp server that a test may kill and start again (on another port)."""

    def __init__(self, models_dir: Path):
        from speedbench.engine import LocalEngine

        self._make = lambda: LocalEngine(_config(models_dir)).start()
        self.engine = self._make()
        self.url = self.engine.url

    def kill(self) -> None:
        os.kill(self.engine.pid, signal.SIGKILL)
        self.engine.process.wait()
        self.engine.stop()

    def restart(self) -> str:
        self.engine = self._make()
        self.url = self.engine.url
        return self.url

    def close(self) -> None:
        self.engine.stop()


@pytest.fixture(scope="module")
def server(models_dir):
    server = Server(models_dir)
    yield server
    server.close()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("faults") / "d", ROWS)


def _live(out: Path) -> dict[tuple[str, int], dict]:
    """Each request-turn's last record (what a rerun leaves live), read here without the client's reader."""
    live = {}
    for record in read_jsonl(out / "records.jsonl"):
        live[(record["question_id"], record["turn_index"])] = record
    return live


def _al(out: Path) -> float:
    point = json.loads((out / "results.json").read_text())["points"][0]
    return point["acceptance"][point["primary_acceptance_source"]]["acceptance_length"]


@pytest.fixture(scope="module")
def clean(server, dataset, models_dir, tmp_path_factory):
    """The reference: a clean run through a proxy without faults."""
    out = tmp_path_factory.mktemp("clean") / "run"
    with FaultProxy(server.url) as proxy:
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS) == 0
    live = _live(out)
    assert sorted(live) == sorted(TURNS) and all(r["error"] is None for r in live.values())
    assert all(r["output_token_ids_source"] == "engine" and len(r["output_token_ids"]) == 48 for r in live.values())
    return {key: r["output_token_ids"] for key, r in live.items()}, _al(out)


# fault plan by generation request -> the error kinds of the first pass (skipped turns included)
CASES = {
    "mid_stream_cut": ({1: Fault("cut", after=3), 4: Fault("cut", after=1)},
                       {"connection": 2, "skipped_after_error": 1}),
    # 0: reset, then the client's one retry on a fresh connection (1) succeeds; 2 and 3, 7 and 8: twice
    "reset_before_any_byte": ({0: Fault("reset"), 2: Fault("reset"), 3: Fault("reset"), 7: Fault("reset"),
                               8: Fault("reset")}, {"connection": 2}),
    "stall_past_read_timeout": ({2: Fault("stall", after=2), 9: Fault("stall", after=0)},
                                {"timeout": 2, "skipped_after_error": 2}),
    "slow_drip": ({0: Fault("drip"), 5: Fault("drip", piece=1)}, {}),
    "garbage_bytes": ({1: Fault("garbage", after=2), 6: Fault("garbage", after=0)}, {"malformed": 2}),
    # aiohttp reports a broken chunk header in the first read at once, a later one never: the client's
    # read watchdog (--read-timeout) ends that wait and names the parser's error (stream._framing_error)
    "broken_chunked_framing": ({2: Fault("bad_framing", after=2), 10: Fault("bad_framing", after=0)},
                               {"malformed": 2, "skipped_after_error": 1}),
}


def _check_successes(out: Path, reference: dict) -> list[dict]:
    """Every success record in the file carries the clean run's tokens; returns all records."""
    records = read_jsonl(out / "records.jsonl")
    for record in records:
        if record["error"] is None:
            key = (record["question_id"], record["turn_index"])
            assert record["output_token_ids"] == reference[key], key
            assert sum(record["chunk_tokens"]) == record["output_tokens"] == 48
    return records


def _kinds(records: list[dict]) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for record in records:
        if record["error"] is not None:
            kinds[record["error_kind"]] = kinds.get(record["error_kind"], 0) + 1
    return kinds


def _check_complete(out: Path, reference: dict, al: float, failed_first: int) -> None:
    live = _live(out)
    assert sorted(live) == sorted(TURNS)
    assert all(r["error"] is None for r in live.values())
    assert {key: r["output_token_ids"] for key, r in live.items()} == reference
    records = read_jsonl(out / "records.jsonl")
    assert len(records) == len(TURNS) + failed_first  # the failed ones stay, as history
    # each rerun says how many records of its key came before it
    for record in records:
        before = [r for r in records[:records.index(record)] if r["record_key"] == record["record_key"]]
        assert record.get("supersedes", 0) == len(before)
    point = json.loads((out / "results.json").read_text())["points"][0]
    assert point["num_requests"] == len(TURNS) and point["num_errors"] == 0
    assert point["num_superseded"] == failed_first
    assert point["coverage"]["share"] == 1.0 and point["coverage"]["below"] == []
    assert _al(out) == al


@pytest.mark.parametrize("case", sorted(CASES))
def test_fault_then_retry_errors_completes_the_run(case, clean, server, dataset, models_dir, tmp_path):
    reference, al = clean
    plan, kinds = CASES[case]
    out = tmp_path / "run"
    extra = ("--read-timeout", "1") if case.startswith(("stall", "broken")) else ()
    with FaultProxy(server.url, plan) as proxy:
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS, *extra) == 0
        assert {i for i, kind in proxy.seen if kind} == set(plan)  # every planned fault was met
        first = _check_successes(out, reference)
        assert _kinds(first) == kinds
        if case == "reset_before_any_byte":  # the in-run retry: it never reached the server, sent again at once
            row0 = next(r for r in first if r["question_id"] == ROWS[0].question_id)
            assert row0["error"] is None and row0["attempts"] == 2
        failed = sum(kinds.values())
        if failed:
            point = json.loads((out / "results.json").read_text())["points"][0]
            assert point["coverage"]["measured"] == len(TURNS) - failed
            counters = [f for f in point["flags"] if f.startswith("disagreement") and "from counters" in f]
            assert all("the counters include the tokens the server generated" in f for f in counters)
            if case.startswith("stall"):  # the server finished both stalled streams, which the client lost
                assert counters and all("1 request(s) failed mid-stream after 2 token(s) had arrived and 1 failed "
                                        "before their first token" in f for f in counters)
        proxy.set_plan({})
        retry = ("--retry-errors", "--retry-kinds", "connection,timeout,malformed") \
            if case.startswith(("garbage", "broken")) else ("--retry-errors",)
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS, *retry) == 0
    _check_successes(out, reference)
    _check_complete(out, reference, al, failed)


def test_permanent_errors_are_not_retried_unless_named(clean, server, dataset, models_dir, tmp_path):
    reference, al = clean
    out = tmp_path / "run"
    with FaultProxy(server.url, {1: Fault("garbage", after=2), 4: Fault("cut", after=2)}) as proxy:
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS) == 0
        proxy.set_plan({})
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS, "--retry-errors") == 0
        live = _live(out)
        # the cut (connection) and the turn it blocked ran again; the malformed stream did not
        assert [key for key, r in live.items() if r["error"] is not None] == [(ROWS[1].question_id, 0)]
        assert live[(ROWS[1].question_id, 0)]["error_kind"] == "malformed"
        assert live[(ROWS[3].question_id, 1)].get("supersedes") == 1
        point = json.loads((out / "results.json").read_text())["points"][0]
        assert point["num_superseded"] == 2 and point["coverage"]["measured"] == len(TURNS) - 1
        resent = len(proxy.seen)
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS) == 0  # a plain resume: nothing
        assert len(proxy.seen) == resent
        assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS, "--retry-errors",
                       "--retry-kinds", "malformed") == 0
    _check_complete(out, reference, al, 3)


def test_server_killed_and_restarted_mid_run(clean, models_dir, dataset, tmp_path):
    reference, al = clean
    out = tmp_path / "run"
    server = Server(models_dir)
    try:
        # 3 (row 3, turn 0) kills the server: its retry (4) finds it down; 5 (row 4) starts it again
        with FaultProxy(server.url, {3: Fault("kill"), 5: Fault("restart")}, on_kill=server.kill,
                        on_restart=server.restart) as proxy:
            assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS) == 0
            first = _check_successes(out, reference)
            assert _kinds(first) == {"connection": 1, "skipped_after_error": 2}
            proxy.set_plan({})
            assert run_cli("llamacpp", proxy.url, dataset, out, models_dir, *OPTIONS, "--retry-errors") == 0
    finally:
        server.close()
    _check_complete(out, reference, al, 3)


def test_sweep_whose_server_dies_mid_run_completes_with_retry_errors(clean, models_dir, dataset, tmp_path):
    """`speedbench sweep` against a server (a url variant behind the proxy) killed and restarted in
    the middle of a run: the run ends with the failures recorded; `speedbench sweep --retry-errors`
    reruns them in the finished run, which then equals the clean run."""
    from speedbench.cli import main

    reference, al = clean
    server = Server(models_dir)
    try:
        with FaultProxy(server.url, {3: Fault("kill"), 5: Fault("restart")}, on_kill=server.kill,
                        on_restart=server.restart) as proxy:
            plan = tmp_path / "plan.toml"
            plan.write_text(f'tokenizer = "{models_dir}"\ndataset = "{dataset}"\n[run]\nmax_errors = 1000\n'
                            f'[[workload]]\nconfig = "tiny"\nconcurrency = [1]\nmax_tokens = 48\n'
                            f'[[variant]]\nname = "sd"\nengine = "llamacpp"\nmethod = "draft"\nk = 3\n'
                            f'url = "{proxy.url}"\n')
            out = tmp_path / "sweep"
            sweep = ["sweep", str(plan), "--out", str(out), "--no-progress", "--resamples", "20", "--no-report"]
            assert main(sweep) == 0
            run = next((out / "runs").iterdir())
            assert _kinds(_check_successes(run, reference)) == {"connection": 1, "skipped_after_error": 2}
            sent = len(proxy.seen)
            assert main(sweep) == 0  # a plain resume: the run is finished
            assert len(proxy.seen) == sent
            assert main(sweep + ["--retry-errors"]) == 0
            assert len(proxy.seen) == sent + 3
    finally:
        server.close()
    _check_complete(run, reference, al, 3)
