"""Benchmark: thinking vs answer (speedbench.metrics.phases) over 10,000 request records of 100 steps.

Each record streams a lone prefill token, 60 thinking steps whose drafts follow THINKING_RATES
(the last token of the 60th is the boundary), then 40 answer steps following ANSWER_RATES (K = 4),
with chunk times 5-15 ms apart. Prints the CPU and wall
time of ``phase_results`` (no bootstrap, then 1,000 resamples) and the AL per phase next to the
AL the rates imply (1 + sum_i prod_{j<=i} AR_j).

Run: .venv/bin/python bench/phases.py [--records N]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from speedbench.metrics.phases import PhaseMarkers, phase_results
from speedbench.records import TurnRecord

THINKING_RATES = np.array([0.9, 0.8, 0.7, 0.6])
ANSWER_RATES = np.array([0.7, 0.5, 0.4, 0.3])
BOUNDARY = 151668


def _steps(rng: np.random.Generator, rates: np.ndarray, n: int) -> list[int]:
    accepted = np.cumprod(rng.random((n, rates.size)) < rates, axis=1).sum(axis=1)
    return (accepted + 1).tolist()


def simulate(num_records: int, seed: int = 0) -> list[TurnRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for n in range(num_records):
        thinking, answer = _steps(rng, THINKING_RATES, 60), _steps(rng, ANSWER_RATES, 40)
        sizes = [1] + thinking + answer
        ids = rng.integers(0, 100_000, size=sum(sizes)).tolist()
        ids[sum(sizes[:61]) - 1] = BOUNDARY  # the last token of the 60th thinking step
        start = 10**12 + n * 10**10
        times = (start + np.cumsum(rng.integers(5, 15, size=len(sizes))) * 10**6).tolist()
        records.append(TurnRecord(
            record_key=f"c1/q{n}/0", run_point="c1", load_shape="closed", requested_concurrency=1,
            request_rate=None, question_id=f"q{n}", category=("math", "coding", "writing")[n % 3], sub_category="",
            turn_index=0, num_turns=1, warmup=False, worker=0, prompt_tokens=100, prompt_sha256="",
            scheduled_ns=start, send_ns=start, end_ns=times[-1], started_unix_s=0.0, chunk_ns=times,
            chunk_tokens=sizes, chunks_are_steps=True, output_tokens=sum(sizes), finish_reason="stop",
            output_token_ids=ids, output_token_ids_source="engine"))
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    records = simulate(args.records)
    markers = PhaseMarkers(boundary_ids=(BOUNDARY,))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.records} records x 101 chunks, K = 4")
    for resamples in (0, 1000):
        cpu, wall = time.process_time(), time.perf_counter()
        result = phase_results(records, markers, 4, num_resamples=resamples)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(f"phase_results, {resamples} resamples: {cpu:.2f} s CPU, {wall:.2f} s wall")
    for name, rates in (("thinking", THINKING_RATES), ("answer", ANSWER_RATES)):
        phase = result.phases[name]
        ci = phase["chunks"]["acceptance_length_ci"]
        print(f"{name:>8}: AL {phase['acceptance_length']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}], "
              f"from the rates {1 + np.cumprod(rates).sum():.4f}; {phase['num_tokens']} tokens, "
              f"{phase['tokens_per_s']:.1f} tokens/s")
    print(f"rules {result.rules}, spanning steps {result.num_spanning_steps}")


if __name__ == "__main__":
    main()
