"""Fixtures of the metrics tests: simulated speculative-decoding runs with known per-position rates."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SimulatedRun:
    conditional: np.ndarray  # true AR_1..AR_K
    accepted: list[np.ndarray]  # accepted drafts of every verification step, per request
    chunks: list[list[int]]  # as streamed: lone prefill token, one chunk per step, a cut last chunk

    @property
    def draft_length(self) -> int:
        return int(self.conditional.size)


def simulate_run(conditional, num_requests: int, steps_per_request, seed: int) -> SimulatedRun:
    """Steps accept draft position i with probability AR_i given positions < i were accepted.

    ``steps_per_request`` is an int or an array of per-request step counts.
    """
    rng = np.random.default_rng(seed)
    ar = np.asarray(conditional, dtype=float)
    lengths = np.broadcast_to(np.asarray(steps_per_request), (num_requests,))
    accepted, chunks = [], []
    for n in lengths:
        draws = rng.random((int(n), ar.size)) < ar
        acc = np.cumprod(draws, axis=1).sum(axis=1)
        accepted.append(acc)
        cut = int(rng.integers(1, ar.size + 2))  # the last chunk, cut by EOS / max_tokens
        chunks.append([1] + (acc + 1).tolist() + [cut])
    return SimulatedRun(conditional=ar, accepted=accepted, chunks=chunks)


@pytest.fixture(scope="session")
def simulate():
    return simulate_run


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
