"""Losslessness: SD outputs against the baseline's, token by token (hand-computed cases)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from speedbench.metrics.losslessness import compare_outputs, first_divergence

WIRE = Path(__file__).resolve().parents[2].parent / "shared" / "wire" / "vllm-0.32.0-cpu"


@pytest.mark.parametrize("a, b, expected", [
    ([1, 2, 3], [1, 2, 3], None),
    ([1, 2, 3], [1, 2, 4], 2),
    ([5], [6], 0),
    ([1, 2], [1, 2, 3], 2),  # a proper prefix diverges where it ends
    ([1, 2, 3, 9], [1, 2, 3], 3),
    ([], [], None),
    ([], [7], 0),
])
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_compare_outputs_with_a_planted_divergence():
    sd = {"q1/0": [1, 2, 3, 4], "q2/0": [5, 6, 7], "q3/0": [8, 9], "only_sd/0": [1]}
    base = {"q1/0": [1, 2, 3, 4], "q2/0": [5, 6, 0], "q3/0": [8, 9], "only_base/0": [1]}
    summary = compare_outputs(sd, base, skipped={"prompt_differs": 2})
    assert (summary.num_compared, summary.num_identical) == (3, 2)
    assert summary.share_identical == pytest.approx(2 / 3)
    assert [(r.key, r.first_divergence) for r in summary.divergent] == [("q2/0", 2)]
    assert summary.skipped == {"prompt_differs": 2}
    assert "nondetermin" in summary.note or "not bitwise deterministic" in summary.note
    empty = compare_outputs({}, {})
    assert (empty.num_compared, empty.share_identical) == (0, None)


def _ids(name: str) -> list[int]:
    ids = []
    for line in (WIRE / name).read_text().splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            for choice in json.loads(line[6:]).get("choices") or []:
                ids += choice.get("token_ids") or []
    return ids


@pytest.mark.skipif(not WIRE.is_dir(), reason=f"{WIRE} (recorded real-vLLM traffic) is not here")
def test_real_vllm_greedy_speculation_modes_agree():
    # The same prompt, greedy, through a q4 draft model, the model drafting for itself, and n-gram:
    # all 48 ids equal (read off the captures), as lossless speculation promises.
    draft, ngram, self_draft = _ids("draftq4_stream.sse"), _ids("ngram_stream.sse"), _ids("draftself_stream.sse")
    assert len(draft) == 48
    summary = compare_outputs({"a/0": draft, "b/0": self_draft}, {"a/0": ngram, "b/0": ngram})
    assert (summary.num_compared, summary.num_identical, summary.share_identical) == (2, 2, 1.0)
    planted = draft[:30] + [draft[30] + 1] + draft[31:]
    assert first_divergence(planted, ngram) == 30
