"""The shared record rules (speedbench/analysis/consistency.py), one case per rule and per documented
tolerance: n-gram partial drafting, drafts accepted past max_tokens (at most K), merged chunks,
SGLang's short histograms, llama.cpp's decode-step counts, TensorRT-LLM's rounded proxy."""
from __future__ import annotations

import subprocess
import sys

import pytest

from speedbench.analysis.consistency import check_acceptance_plausible, check_prompt_lengths, check_record
from speedbench.analysis.coverage_rules import check_coverage
from speedbench.records import EngineSpecStats, TurnRecord

K = 3
MS = 1_000_000


def record(chunks=(1, 4, 4, 3, 2), step_ns=20 * MS, key="c1/q1/0", stats=None, **changes) -> TurnRecord:
    start = 10**12
    times = [start + 50 * MS + i * step_ns for i in range(len(chunks))]
    values = dict(record_key=key, run_point="c1", load_shape="closed", requested_concurrency=1, request_rate=None,
                  question_id=key.split("/")[1], category="coding", sub_category="", turn_index=0, num_turns=1,
                  warmup=False, worker=0, prompt_tokens=100, prompt_sha256="", scheduled_ns=start,
                  send_ns=start + 1000, end_ns=times[-1] + 1000, started_unix_s=1.7e9, chunk_ns=times,
                  chunk_tokens=list(chunks), chunks_are_steps=True, output_tokens=sum(chunks), finish_reason="length",
                  engine_stats=stats)
    values.update(changes)
    return TurnRecord(**values)


def rules(r: TurnRecord, k: int = K) -> list[str]:
    return [v.rule for v in check_record(r, k)]


def vllm(decode, accepted, past=0, drafted_steps=None, drafted=None, hist=None, k=K) -> EngineSpecStats:
    drafted_steps = decode if drafted_steps is None else drafted_steps
    return EngineSpecStats(source="vllm.metrics", verify_steps=drafted_steps, draft_tokens=drafted or drafted_steps * k,
                           accepted_tokens=accepted, acceptance_histogram=hist, draft_length=k, decode_steps=decode,
                           drafted_steps=drafted_steps, accepted_past_max_tokens=past)


def test_a_clean_record_breaks_no_rule():
    # 14 tokens: prefill 1, then steps of 4, 4, 3, 2 -> 4 decode steps, 9 accepted drafts
    assert rules(record(stats=vllm(4, 9, hist=[0, 1, 1, 2]))) == []


@pytest.mark.parametrize("past,expected", [(0, []), (1, []), (K, []), (K + 1, ["stats.steps_vs_output"])])
def test_drafts_accepted_past_max_tokens_up_to_k(past, expected):
    # 9 tokens: prefill, then 4 steps of 2; the engine counts `past` more accepted drafts than were
    # emitted (the last step was cut by max_tokens)
    assert rules(record(chunks=(1, 2, 2, 2, 2), stats=vllm(4, 4 + past))) == expected


def test_ngram_partially_drafted_steps_are_fine():
    # 63 decode steps, 34 of them drafted (vLLM n-gram); 64 single-token-or-more chunks merged by the stream
    chunks = [1] + [2] * 20 + [1] * 43
    stats = vllm(63, 20, drafted_steps=34, drafted=34 * K)
    assert rules(record(chunks=chunks, stats=stats, chunks_are_steps=False)) == []
    assert rules(record(chunks=chunks, stats=vllm(63, 20, drafted_steps=34, drafted=34 * K + 1),
                        chunks_are_steps=False)) == ["stats.drafted_vs_steps"]


def test_llamacpp_counts_decode_steps_and_may_draft_fewer_than_k():
    stats = EngineSpecStats(source="llamacpp.timings", verify_steps=4, draft_tokens=7, accepted_tokens=9)
    assert rules(record(stats=stats)) == ["stats.accepted_exceeds_drafted"]  # 9 accepted of 7 drafted
    stats = EngineSpecStats(source="llamacpp.timings", verify_steps=4, draft_tokens=10, accepted_tokens=9)
    assert rules(record(stats=stats)) == []


def test_sglang_histogram_may_be_shorter_than_k_plus_one():
    stats = EngineSpecStats(source="sglang.meta_info", verify_steps=4, draft_tokens=None, accepted_tokens=3,
                            acceptance_histogram=[1, 3], draft_length=K)
    assert rules(record(chunks=(1, 2, 2, 2, 1), stats=stats)) == []


def test_a_rounded_proxy_is_not_held_to_the_identities():
    stats = EngineSpecStats(source="trtllm.avg_decoded_tokens_per_iter", verify_steps=2, accepted_tokens=50,
                            exact=False)
    assert rules(record(stats=stats)) == []
    assert rules(record(stats=EngineSpecStats(source="trtllm", draft_length=5, exact=False))) == ["stats.k_mismatch"]


def test_merged_chunks_may_exceed_k_plus_one_only_when_not_steps():
    assert rules(record(chunks=(1, 8, 5), chunks_are_steps=False)) == []
    assert rules(record(chunks=(2, 4))) == []  # the first chunk may hold the prefill's token and a step


def test_a_chunk_over_k_plus_one_is_merged_unless_the_engine_counted_one_step_per_chunk():
    """The acceptance figures count a chunk of more than K + 1 tokens as merged steps; the rule agrees
    where the engine's own decode steps leave room for the merge (vLLM's frontend merges steps)."""
    assert rules(record(chunks=(1, 8, 5))) == ["chunks.step_size"]  # no engine counts: nothing shows a merge
    # 14 tokens = 1 + 4 decode steps + 9 accepted: room for the 2 chunks to hold 4 steps
    assert rules(record(chunks=(1, 8, 5), stats=vllm(4, 9))) == []
    # the engine says 2 decode steps for the 2 chunks after the prefill's: 8 tokens in one step
    found = check_record(record(chunks=(1, 8, 5), stats=vllm(2, 11)), K)
    assert [v.rule for v in found][:2] == ["chunks.step_size", "stats.accepted_exceeds_drafted"]
    assert "8 tokens in one chunk, and the engine counted one decode step per chunk (2)" in found[0].detail
    # llama.cpp names each event's step: its chunks are single steps whatever its counts say
    llamacpp = EngineSpecStats(source="llamacpp.timings", verify_steps=4, draft_tokens=12, accepted_tokens=9)
    assert rules(record(chunks=(1, 8, 5), stats=llamacpp)) == ["chunks.step_size"]


def test_a_stream_read_at_once_is_client_lag_not_an_impossible_engine():
    """A descheduled client reads a whole answer at once: every chunk gets one stamp. The record is
    client-lagged (speedbench.metrics.client_timing), not faster than any engine."""
    assert rules(record(step_ns=0)) == []
    assert rules(record(chunks=(1, 4, 4, 3, 2), step_ns=0, chunks_are_steps=True)) == []


@pytest.mark.parametrize("extra,expected", [(1, []), (-1, []), (2, ["chunks.sum"])])
def test_chunk_sum_within_one_token_of_output(extra, expected):
    r = record()
    r.output_tokens += extra
    assert rules(r) == expected


def test_histogram_rules():
    assert rules(record(stats=vllm(4, 9, hist=[0, 1, 1, 2, 0, 0]))) == []  # trailing empty bins are harmless
    assert rules(record(stats=vllm(4, 9, hist=[0, 1, 1, 1, 1]))) == ["stats.histogram_width"]
    assert rules(record(stats=vllm(4, 9, hist=[1, 0, 1, 2]))) == ["stats.histogram_counts"]


def test_baselines_draft_nothing():
    assert rules(record(chunks=(1, 1, 1, 1)), k=0) == []
    assert rules(record(chunks=(1, 2, 1)), k=0) == ["baseline.drafted"]
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=3, draft_tokens=0, accepted_tokens=0)
    assert rules(record(chunks=(1, 1, 1, 1), stats=stats), k=0) == []
    stats = EngineSpecStats(source="vllm.metrics", verify_steps=3, draft_tokens=9, accepted_tokens=2)
    assert rules(record(chunks=(1, 1, 1, 1), stats=stats), k=0) == ["baseline.drafted"]


def test_time_order_and_physical_bounds():
    # 13 tokens after the first in 4 ns, 50 ms after the send: a burst of delivery (a busy client or
    # server frontend), not an impossible engine: every token came after the send
    assert rules(record(step_ns=1)) == []
    # counted from the send, 20,000 tokens/s allow 13 tokens (9 plus K + 1 slack) in 0.45 ms, not in 0.3 ms
    burst = record(step_ns=1)
    assert rules(record(step_ns=1, send_ns=burst.chunk_ns[-1] - 450_000)) == []
    assert rules(record(step_ns=1, send_ns=burst.chunk_ns[-1] - 300_000)) == ["bounds.user_tps"]
    r = record()
    r.send_ns = r.scheduled_ns - 1
    assert rules(r) == ["time.order"]
    assert rules(record(prompt_tokens=0)) == ["bounds.prompt_tokens"]
    assert rules(record(num_turns=17)) == ["bounds.turns"]
    assert rules(record(turn_index=1)) == ["bounds.turns"]


def test_coverage_thresholds():
    def run(answered: int, failed: int = 0):
        rs = [record(key=f"c1/q{i}/0") for i in range(answered + failed)]
        for r in rs[answered:]:
            r.error = "boom"
        return rs

    assert check_coverage(run(99, 1), expected_prompts=100) == []  # 99% answered, 1% failed
    assert [v.rule for v in check_coverage(run(98, 2), expected_prompts=100)] == ["coverage.errors",
                                                                                   "coverage.prompts"]
    assert [v.rule for v in check_coverage(run(98), expected_prompts=100)] == ["coverage.prompts"]
    two_turns = [record(key="c1/q1/0", num_turns=2)]
    assert [v.rule for v in check_coverage(two_turns, expected_prompts=None)] == ["coverage.turns"]
    two_turns.append(record(key="c1/q1/1", num_turns=2, turn_index=1))
    assert check_coverage(two_turns, expected_prompts=1) == []


def test_prompt_lengths_fit_the_bucket():
    assert check_prompt_lengths([record(prompt_tokens=500), record(prompt_tokens=2000)], 1000) == []
    assert [v.rule for v in check_prompt_lengths([record(prompt_tokens=499)], 1000)] == ["isl.bucket"]
    assert check_prompt_lengths([record(prompt_tokens=5)], None) == []  # the qualitative split has no bucket


def test_uniformly_perfect_acceptance():
    perfect = [record(chunks=[1] + [4] * 30 + [2], key=f"c1/q{i}/0") for i in range(4)]
    assert [v.rule for v in check_acceptance_plausible(perfect, K)] == ["acceptance.perfect"]
    perfect[0].chunk_tokens[5] = 3
    assert check_acceptance_plausible(perfect, K) == []


@pytest.mark.parametrize("module", ["speedbench.analysis.consistency", "speedbench.leaderboard.known_builds",
                                    "speedbench.leaderboard.validate"])
def test_core_modules_do_not_import_the_edges(module):
    code = (f"import sys, {module}; bad = sorted(m for m in sys.modules if m.startswith(('speedbench.client', "
            "'speedbench.dataset_builder', 'gradio'))); print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_board_refuses_client_lag_only_above_the_documented_share():
    from speedbench.analysis.consistency import check_client_lag
    from speedbench.metrics.client_timing import MAX_CLIENT_LAGGED_SHARE

    healthy = [record(key=f"c1/q{i}/0") for i in range(6)]
    lagged = [record(key=f"c1/l{i}/0", step_ns=0) for i in range(2)]
    assert MAX_CLIENT_LAGGED_SHARE == 0.25
    assert check_client_lag(healthy + lagged) == []  # 2 of 8 = 25%: not above
    found = check_client_lag(healthy[:5] + lagged)  # 2 of 7
    assert [v.rule for v in found] == ["client.lag"] and "2 of 7 requests at load point c1" in found[0].detail
