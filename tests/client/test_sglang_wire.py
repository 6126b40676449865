"""What a real SGLang 0.5.23 sent (../shared/wire/sglang-0.5.23-cpu/, read there at test time, never
copied) parses to the right tokens and statistics, and the stand-in server reproduces its facts.

Expected values are counted in the test from the raw capture lines (ids per event, the final
``meta_info``, the counter lines) or written down by hand from them, never taken from the code.
The K of a run comes from the server's flags as the capture README records them.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from speedbench.client.run.counters import parse_prometheus
from speedbench.metrics.acceptance.draft_length import server_draft_length

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "sglang-0.5.23-cpu"
pytestmark = pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-SGLang traffic) is not here")

# The servers' flags (capture README): chain = STANDALONE steps 3, topk 1, 4 draft tokens;
# tree = steps 3, topk 2, 6 draft tokens; n-gram = 8 draft tokens. As /server_info names them.
CHAIN_INFO = {"speculative_algorithm": "STANDALONE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
              "speculative_num_draft_tokens": 4}
TREE_INFO = {**CHAIN_INFO, "speculative_eagle_topk": 2, "speculative_num_draft_tokens": 6}
NGRAM_INFO = {"speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 8}


def _events(name: str) -> list[dict]:
    return [json.loads(line[6:]) for line in (WIRE / name).read_text().splitlines()
            if line.startswith("data: ") and line[6:] != "[DONE]"]


def _parse(name: str):
    adapter = get_adapter("sglang")("http://x")
    state = StreamState()
    sizes = [adapter.parse_event(event, state)[0] for event in _events(name)]
    return state, sizes, adapter.engine_stats(state)


def _by_hand(name: str) -> dict:
    """Counted from the raw lines: ids per event (output_ids is cumulative), the last meta_info."""
    events = _events(name)
    lengths = [len(e["output_ids"]) for e in events]
    meta = events[-1]["meta_info"]
    return {"sizes": [b - a for a, b in zip([0] + lengths, lengths)], "ids": events[-1]["output_ids"],
            "text": events[-1]["text"], "meta": meta}


@pytest.mark.parametrize("name", ["standalone_generate.sse", "standalone_tree_generate.sse",
                                  "standalone_tree_generate_temp08.sse", "ngram_generate.sse",
                                  "ngram_generate_repeat.sse", "ngram_concurrent_1.sse", "plain_generate.sse"])
def test_cumulative_stream_parses_to_the_output(name):
    state, sizes, stats = _parse(name)
    hand = _by_hand(name)
    assert [s for s in sizes if s] == hand["sizes"]  # one event per step: the prefill's, then each verify's
    assert state.token_ids == hand["ids"] and state.text == hand["text"]
    assert state.tokens_total == hand["meta"]["completion_tokens"] == len(hand["ids"])
    assert state.finish_reason == "length" and state.response_id == hand["meta"]["id"]
    if name.startswith("plain"):
        assert stats is None  # no speculation: no spec_* fields at all
        return
    meta = hand["meta"]
    assert (stats.verify_steps, stats.accepted_tokens, stats.draft_tokens) == (
        meta["spec_verify_ct"], meta["spec_num_correct_drafts"], meta["spec_num_proposed_drafts"])
    assert stats.acceptance_histogram == meta["spec_correct_drafts_histogram"]
    assert stats.source == "sglang.meta_info" and stats.decode_steps == meta["spec_verify_ct"]
    # The prefill token, 1 + accepted per verify: what exceeds the output was accepted past max_tokens.
    assert stats.accepted_past_max_tokens == 1 + meta["spec_verify_ct"] + meta["spec_num_correct_drafts"] - len(hand["ids"])


def test_chain_and_tree_facts_counted_by_hand():
    chain, tree = _parse("standalone_generate.sse")[2], _parse("standalone_tree_generate.sse")[2]
    # 12 events: 1 + 4 x 9 + 3 ... = 40 tokens over 11 verify calls, 28 drafts accepted, in both.
    assert (chain.verify_steps, chain.accepted_tokens, chain.acceptance_histogram) == (11, 28, [1, 0, 2, 8])
    assert (tree.verify_steps, tree.accepted_tokens, tree.acceptance_histogram) == (11, 28, [0, 1, 3, 7])
    # Proposed: a chain 3 per verify (33), a tree its 5 nodes per verify (55).
    assert (chain.draft_tokens, tree.draft_tokens) == (33, 55)
    # SGLang's own AL counts the prefill token: 40 / 11 for both; its "rate" differs: 28/33 vs 28/55.
    assert chain.raw["spec_accept_length"] == tree.raw["spec_accept_length"] == pytest.approx(40 / 11)
    assert (chain.raw["spec_accept_rate"], tree.raw["spec_accept_rate"]) == (pytest.approx(28 / 33), pytest.approx(28 / 55))
    assert 1 + chain.accepted_tokens / chain.verify_steps == pytest.approx(1 + 28 / 11)
    # Acceptance per position by depth, from the histogram h_0..h_3: steps that reached depth d.
    for stats, expected in ((chain, [10 / 11, 10 / 11, 8 / 11]), (tree, [11 / 11, 10 / 11, 7 / 11])):
        h = stats.acceptance_histogram
        assert [sum(h[d:]) / stats.verify_steps for d in (1, 2, 3)] == pytest.approx(expected)


def test_draft_length_of_chain_tree_and_ngram_from_server_info():
    """K for a tree is its depth (3), not its 5 nodes: the histogram goes to h_3 at most."""
    assert server_draft_length(CHAIN_INFO) == 3
    assert server_draft_length(TREE_INFO) == 3
    assert server_draft_length(NGRAM_INFO) == 7
    assert len(_parse("standalone_tree_generate.sse")[2].acceptance_histogram) - 1 <= 3


def test_ngram_cold_and_warm_store():
    cold, warm = _parse("ngram_generate.sse")[2], _parse("ngram_generate_repeat.sse")[2]
    # Cold: 39 verify calls x 7 proposed = 273, none accepted; warm: 5 calls, 34 of 35 accepted.
    assert (cold.verify_steps, cold.draft_tokens, cold.accepted_tokens, cold.acceptance_histogram) == (39, 273, 0, [39])
    assert (warm.verify_steps, warm.draft_tokens, warm.accepted_tokens) == (5, 35, 34)
    assert warm.acceptance_histogram == [0, 0, 0, 0, 0, 0, 1, 4]


def test_temperature_tree_accepts_past_max_tokens():
    state, _, stats = _parse("standalone_tree_generate_temp08.sse")
    # 30 tokens emitted; 1 + 8 verify calls + 23 accepted = 32: the last verify's 2 extra were cut.
    assert (state.tokens_total, stats.verify_steps, stats.accepted_tokens, stats.accepted_past_max_tokens) == (30, 8, 23, 2)


def _metrics(name: str) -> dict[str, float]:
    return parse_prometheus((WIRE / name).read_text()).totals


def test_metrics_counters_and_stale_gauges():
    chain = _metrics("standalone_metrics.txt")
    # Counters summed over is_streaming="true"/"false" (80 + 8 generated tokens; warm-up included).
    assert chain["sglang:spec_verify_calls_total"] == 24.0
    assert chain["sglang:generation_tokens_total"] == 88.0
    # The gauges refresh on the decode log line only (every 40 steps by default): 0 after short runs.
    assert chain["sglang:spec_accept_length"] == 0.0 and chain["sglang:spec_num_draft_tokens"] == 0.0
    tree = _metrics("standalone_tree_metrics.txt")
    # A refreshed tree window: AL 2.0 = 1 + accepted/verify, rate 0.2 = accepted / (verify x 5 nodes).
    assert (tree["sglang:spec_accept_length"], tree["sglang:spec_accept_rate"]) == (2.0, 0.2)
    assert (tree["sglang:spec_num_steps"], tree["sglang:spec_num_draft_tokens"]) == (3.0, 6.0)


# -- the stand-in reproduces the captures' facts ---------------------------------------------
@pytest.fixture
def tree_standin():
    from tests.standins.standin import StandinServer
    from tests.standins.standin_sim import Simulation

    sim = Simulation(conditional_rates=[0.9, 0.8, 0.6], sglang_topk=2, sglang_tree_nodes=5,
                     sglang_decode_log_interval=1000)
    with StandinServer("sglang", sim) as server:
        yield server


def _post_stream(url: str, ids: list[int], max_tokens: int) -> list[dict]:
    import urllib.request

    body = json.dumps({"input_ids": ids, "sampling_params": {"max_new_tokens": max_tokens}, "stream": True}).encode()
    request = urllib.request.Request(url + "/generate", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        lines = response.read().decode().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line[6:] != "[DONE]"]


def test_standin_speaks_like_the_capture(tree_standin):
    import urllib.request

    events = _post_stream(tree_standin.url, [1, 403, 407, 261, 378], 40)
    lengths = [len(e["output_ids"]) for e in events]
    # Cumulative output_ids, like the text and completion_tokens.
    assert lengths == [e["meta_info"]["completion_tokens"] for e in events] and lengths[-1] == 40
    assert all(events[i]["output_ids"][:lengths[i - 1]] == events[i - 1]["output_ids"] for i in range(1, len(events)))
    meta = events[-1]["meta_info"]
    # A tree proposes its 5 nodes per verify; the rate is per node.
    assert meta["spec_num_proposed_drafts"] == 5 * meta["spec_verify_ct"]
    assert meta["spec_accept_rate"] == pytest.approx(meta["spec_num_correct_drafts"] / (5 * meta["spec_verify_ct"]))
    with urllib.request.urlopen(tree_standin.url + "/server_info", timeout=10) as response:
        info = json.loads(response.read())
    assert {k: info[k] for k in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")} \
        == {"speculative_num_steps": 3, "speculative_eagle_topk": 2, "speculative_num_draft_tokens": 6}
    with urllib.request.urlopen(tree_standin.url + "/metrics", timeout=10) as response:
        metrics = parse_prometheus(response.read().decode()).totals
    # Counters count at once; the gauges wait for the decode log line (interval 1000 here).
    assert metrics["sglang:spec_verify_calls_total"] == meta["spec_verify_ct"]
    assert metrics["sglang:generation_tokens_total"] == 40.0
    assert metrics["sglang:spec_accept_length"] == 0.0 and metrics["sglang:spec_num_draft_tokens"] == 0.0


def _record(name: str):
    """A successful TurnRecord of a captured /generate stream (one chunk per event, 1 ms apart)."""
    from speedbench.records import TurnRecord

    state, sizes, stats = _parse(name)
    steps = [s for s in sizes if s]
    return TurnRecord(record_key="c1/q/0", run_point="c1", load_shape="closed", requested_concurrency=1,
                      request_rate=None, question_id="q", category="writing", sub_category="story", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=5, prompt_sha256="0" * 64,
                      scheduled_ns=0, send_ns=0, end_ns=10**9 * (len(steps) + 1), started_unix_s=0.0,
                      chunk_ns=[10**9 * (i + 1) for i in range(len(steps))], chunk_tokens=steps,
                      chunks_are_steps=True, output_tokens=state.tokens_total, finish_reason="length",
                      response_id=state.response_id, engine_stats=stats)


def test_a_tree_is_consistent_with_its_nodes_and_a_chain_with_k():
    """55 proposed over 11 verify calls is a tree's 5 nodes each: consistent at K = 3 (its depth)
    once the rule knows the nodes (the server's description); without them the same record looks
    like more drafts than a chain of 3 proposes. The chain's 33 over 11 needs no nodes."""
    from speedbench.analysis.consistency import check_record
    from speedbench.metrics.acceptance.draft_length import server_draft_nodes

    tree, chain = _record("standalone_tree_generate.sse"), _record("standalone_generate.sse")
    assert server_draft_nodes(TREE_INFO) == 5 and server_draft_nodes(CHAIN_INFO) is None
    assert server_draft_nodes(NGRAM_INFO) is None
    assert check_record(tree, 3, draft_nodes=server_draft_nodes(TREE_INFO)) == []
    assert [v.rule for v in check_record(tree, 3)] == ["stats.drafted_vs_steps"]  # 55 > 11 x 3
    assert check_record(chain, 3, draft_nodes=server_draft_nodes(CHAIN_INFO)) == []
    # The nodes widen only the proposal bound: a tree still accepts at most its depth per verify.
    assert "stats.histogram_width" in [v.rule for v in check_record(tree, 2, draft_nodes=5)]
