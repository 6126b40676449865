"""What keeping output token ids costs the client: bytes per record and CPU per chunk, before/after.

Side by side in one process, interleaved repetitions (the machine is shared: ratios, not absolute
times, are the figures to read):

- bytes per record: one record of ``--tokens`` output tokens in chunks of ``--tokens-per-chunk``,
  serialized as ``records.jsonl`` writes it, without and with ``output_token_ids`` (ids drawn from a
  150k vocabulary, the size of current target tokenizers);
- CPU per chunk: the vLLM adapter parsing the same decoded events, once with the ids kept
  (``StreamState.add_token_ids`` and the end-of-request check ``stream.engine_token_ids``) and
  once with that step a no-op (what the client did before);
- CPU per record for the fallback: ``output_text`` re-encoded with the target tokenizer (here
  stories260K's, a 512-token vocabulary: a larger vocabulary costs more).

    .venv/bin/python bench/token_ids_overhead.py

The same before/after end to end, at concurrency 256 through the whole client (records written,
CPU of the process): ``bench/client_overhead.py --token-ids-only``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path

import numpy as np
import orjson

from speedbench.client.engines import get_adapter
from speedbench.client.engines.base import StreamState
from speedbench.client.execution.stream import engine_token_ids
from speedbench.records import TurnRecord

REPO = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("SPEEDBENCH_MODELS", REPO.parent / "shared" / "models" / "stories260K"))


def _events(tokens: int, per_chunk: int, rng) -> list[dict]:
    events, emitted = [], 0
    while emitted < tokens:
        ids = rng.integers(0, 150_000, size=min(per_chunk, tokens - emitted)).tolist()
        emitted += len(ids)
        events.append({"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "text": " word" * len(ids), "logprobs": None, "finish_reason": None,
                                    "stop_reason": None, "prompt_token_ids": None, "token_ids": ids}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": emitted, "total_tokens": 100 + emitted}})
    return events


def _record(events: list[dict], ids: list[int] | None) -> TurnRecord:
    sizes = [len(e["choices"][0]["token_ids"]) for e in events]
    return TurnRecord(record_key="c256/q/0", run_point="c256", load_shape="closed", requested_concurrency=256,
                      request_rate=None, question_id="q", category="coding", sub_category="", turn_index=0,
                      num_turns=1, warmup=False, worker=0, prompt_tokens=100, prompt_sha256="0" * 64,
                      scheduled_ns=10 ** 12, send_ns=10 ** 12, end_ns=10 ** 12 + 10 ** 10, started_unix_s=1.8e9,
                      chunk_ns=[10 ** 12 + 10 ** 7 * i for i in range(len(sizes))], chunk_tokens=sizes,
                      chunks_are_steps=True, output_tokens=sum(sizes), output_text="".join(
                          e["choices"][0]["text"] for e in events), finish_reason="length", response_id="cmpl-1",
                      output_token_ids=ids, output_token_ids_source="engine" if ids is not None else None)


@contextlib.contextmanager
def ids_not_kept():
    """The client as it was before it kept output token ids (also used by ``client_overhead.py``):
    the engine's ids are dropped as they arrive and records carry none, neither the engine's nor
    re-encoded ones."""
    from speedbench.client.execution import event_loop as load

    saved = StreamState.add_token_ids, load.output_ids
    StreamState.add_token_ids = lambda self, ids: None
    load.output_ids = lambda result, tokenizer: (None, None)
    try:
        yield
    finally:
        StreamState.add_token_ids, load.output_ids = saved


def _parse_cpu_ns(events: list[dict], keep_ids: bool) -> int:
    with contextlib.nullcontext() if keep_ids else ids_not_kept():
        return _parse_events_cpu_ns(events, keep_ids)


def _parse_events_cpu_ns(events: list[dict], keep_ids: bool) -> int:
    adapter = get_adapter("vllm")("http://x")
    state = StreamState()
    start = time.process_time_ns()
    chunk_tokens = [adapter.parse_event(event, state)[0] for event in events]
    if keep_ids:
        engine_token_ids(state, chunk_tokens)  # the per-request check the stream loop adds
    return time.process_time_ns() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=650, help="output tokens per record (paper: ~650 qualitative)")
    parser.add_argument("--tokens-per-chunk", type=int, default=3)
    parser.add_argument("--requests", type=int, default=256, help="records parsed per repetition (one wave at c256)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    events = _events(args.tokens, args.tokens_per_chunk, rng)
    ids = [i for e in events for i in e["choices"][0]["token_ids"]]

    without = len(orjson.dumps(_record(events, None).to_dict())) + 1
    with_ids = len(orjson.dumps(_record(events, ids).to_dict())) + 1
    print(f"record of {args.tokens} tokens in {len(events)} chunks: {without} bytes before, {with_ids} after "
          f"(+{with_ids - without} bytes, {with_ids / without:.2f}x)")

    before, after = [], []
    for _ in range(args.repeats):  # interleaved so that load changes hit both alike
        before.append(sum(_parse_cpu_ns(events, False) for _ in range(args.requests)))
        after.append(sum(_parse_cpu_ns(events, True) for _ in range(args.requests)))
    chunks = len(events) * args.requests
    b, a = statistics.median(before) / chunks, statistics.median(after) / chunks
    print(f"parse CPU per chunk (median of {args.repeats} x {args.requests} records): {b / 1e3:.2f} us before, "
          f"{a / 1e3:.2f} us after ({a / b:.3f}x)")

    from speedbench.tokenization.target import TargetTokenizer

    tokenizer = TargetTokenizer.from_folder(MODELS)
    text = _record(events, None).output_text
    runs = []
    for _ in range(args.repeats):
        start = time.process_time_ns()
        for _ in range(args.requests):
            tokenizer.encode(text)
        runs.append((time.process_time_ns() - start) / args.requests)
    print(f"re-encoding fallback: {statistics.median(runs) / 1e3:.1f} us CPU per record of {len(text)} characters "
          f"({tokenizer.folder.name} tokenizer)")


if __name__ == "__main__":
    main()
