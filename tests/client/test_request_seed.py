"""--seed-per-prompt: the seed sent is --seed plus the first 4 bytes of the sha256 of the prompt's ids
(computed here with hashlib), so each prompt draws its own stream, reproducibly; without it, --seed."""
from __future__ import annotations

import hashlib

from speedbench.client.engines.base import SamplingOptions, request_seed
from speedbench.client.engines.llamacpp import LlamaCppAdapter


def _expected(seed: int, ids: list[int]) -> int:
    return (seed + int(hashlib.sha256(b"1,2,3" if ids == [1, 2, 3] else b"4,5").hexdigest()[:8], 16)) % 2**31


def test_seed_per_prompt_by_hand():
    plain, per_prompt = SamplingOptions(seed=7), SamplingOptions(seed=7, seed_per_prompt=True)
    assert request_seed(plain, [1, 2, 3]) == 7
    assert request_seed(per_prompt, [1, 2, 3]) == _expected(7, [1, 2, 3])
    assert request_seed(per_prompt, [4, 5]) == _expected(7, [4, 5]) != request_seed(per_prompt, [1, 2, 3])
    assert request_seed(SamplingOptions(seed=None, seed_per_prompt=True), [1, 2, 3]) is None


def test_llamacpp_payload_carries_the_prompt_seed():
    adapter = LlamaCppAdapter("http://127.0.0.1:1", sampling=SamplingOptions(seed=0, seed_per_prompt=True))
    assert adapter.build_payload([1, 2, 3])["seed"] == _expected(0, [1, 2, 3])
