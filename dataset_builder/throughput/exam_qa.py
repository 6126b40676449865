"""Mixed entropy: an exam question after Question/Answer-rationale demonstrations that fill the context.

As in the reference, the Humanity's Last Exam (HLE) questions are split 50/50 with a fixed seed:
the test half gives final questions, the train half gives "Question: ... Answer: <rationale>"
demonstrations, preferably of the final question's category. The mirror holds 500 text-only
HLE questions, far too few for 512 prompts per bucket, so GSM8K and MATH take over where HLE runs
out: GSM8K test / MATH-500 problems as further final questions, GSM8K train / MATH (RISE subset)
solutions as further demonstrations.

Reuse: demonstrations are drawn without replacement per bucket while they last; then the pool
is reshuffled and drawn again (seeded), so at 8k and above demonstrations repeat across prompts.
The builder reports how much (reuse.py). Final questions are never reused within a bucket.
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cached_property

from speedbench.dataset_builder.throughput.base import Rendered, TaskType, UnitStream, stable_rng
from speedbench.dataset_builder.throughput.sources import jsonl_records

HLE_SPLIT_SEED = 42
# Demonstrations fill a little past the budget so the fit cuts the last one rather than pads.
FILL_MARGIN_TOKENS = 64
CALCULATOR_ANNOTATION = re.compile(r"<<[^>]*>>")
TAIL_TEMPLATE = "Now answer the following question.\n\nQuestion: {question}\n\nAnswer:"
DATASETS = {"hle": "cais/hle", "gsm8k": "openai/gsm8k", "math500": "HuggingFaceH4/MATH-500",
            "math_rise": "hendrycks/competition_math"}


class ExamQA(TaskType):
    name = "exam_qa"
    tier = "mixed"
    source = "cais/hle"
    license = "MIT"
    reuses_content = True

    @cached_property
    def items(self) -> dict[str, dict]:
        """unit id -> {question, answer, category, role: final|demo}."""
        items: dict[str, dict] = {}
        root = self.sources
        hle = [r for r in jsonl_records(str(root / "benchfortir/hle/top.json"))
               if str(r.get("has_image", "False")) == "False" and r.get("rationale")]
        ids = sorted(r["id"] for r in hle)
        stable_rng("hle-split", HLE_SPLIT_SEED).shuffle(ids)
        test_ids = set(ids[: len(ids) // 2])
        for r in hle:
            items[f"hle:{r['id']}"] = {"question": r["question"], "answer": r["rationale"],
                                       "category": r["category"],
                                       "role": "final" if r["id"] in test_ids else "demo"}
        for split, role in (("test", "final"), ("train", "demo")):
            for i, r in enumerate(jsonl_records(str(root / f"gsm8k/{split}.jsonl"))):
                answer = CALCULATOR_ANNOTATION.sub("", r["answer"]).replace("\n#### ", "\nThe answer is ")
                items[f"gsm8k/{split}:{i}"] = {"question": r["question"], "answer": answer,
                                               "category": "Math", "role": role}
        for i, r in enumerate(jsonl_records(str(root / "benchfortir/math/test.jsonl"))):
            items[f"math500:{i}"] = {"question": r["problem"], "answer": r["solution"],
                                     "category": "Math", "role": "final"}
        for i, r in enumerate(jsonl_records(str(root / "math_rise/math_test_1000.jsonl"))):
            items[f"math_rise:{i}"] = {"question": r["problem"], "answer": r["solution"],
                                       "category": "Math", "role": "demo"}
        return items

    def _finals(self, rng: random.Random) -> list[str]:
        """HLE test questions first (the paper's source), then GSM8K / MATH-500, each block shuffled."""
        blocks = []
        for prefix in ("hle:", "gsm8k/test:", "math500:"):
            block = [u for u, it in self.items.items() if it["role"] == "final" and u.startswith(prefix)]
            rng.shuffle(block)
            blocks.append(block)
        return [u for block in blocks for u in block]

    def capacity(self, n_tokens: int) -> int | None:
        return None  # demonstrations are reused once they run out

    def demonstration(self, unit: str) -> str:
        item = self.items[unit]
        return f"Question: {item['question']}\n\nAnswer: {item['answer']}\n\n"

    def unit_text(self, unit: str) -> str:
        # A final question appears without its answer; a demonstration with it.
        if self.items[unit]["role"] == "final":
            return self.items[unit]["question"]
        return self.demonstration(unit)

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        # A final question must leave room for demonstrations: at most half the bucket.
        finals = [u for u in self._finals(rng) if self.unit_tokens(u) <= n_tokens // 2][:count]
        streams = self.demonstration_streams(rng)
        return [self.select_for(final, n_tokens, streams) for final in finals]

    def demonstration_streams(self, rng: random.Random) -> tuple[dict[str, UnitStream], UnitStream]:
        """Per-category HLE train streams (no reuse) and the general pool (reshuffled when exhausted)."""
        demos = [u for u, it in self.items.items() if it["role"] == "demo"]
        hle_by_category: dict[str, list[str]] = {}
        for u in demos:
            if u.startswith("hle:"):
                hle_by_category.setdefault(self.items[u]["category"], []).append(u)
        same_category = {c: UnitStream(sorted(us), rng, cycle=False) for c, us in sorted(hle_by_category.items())}
        return same_category, UnitStream(sorted(demos), rng, cycle=True)

    def select_for(self, final: str, n_tokens: int,
                   streams: tuple[dict[str, UnitStream], UnitStream]) -> tuple[str, ...]:
        """Demonstrations filling N tokens before ``final`` (same HLE category first), then ``final``."""
        same_category, general = streams
        budget = n_tokens - self.unit_tokens(final) + FILL_MARGIN_TOKENS
        chosen: list[str] = []
        tokens = 0
        stream = same_category.get(self.items[final]["category"]) if final.startswith("hle:") else None
        while tokens < budget:
            unit = stream.draw(set(chosen) | {final}) if stream is not None else None
            if unit is None:
                stream = None
                unit = general.draw(set(chosen) | {final})
            if unit is None:
                break
            chosen.append(unit)
            tokens += self.unit_tokens(unit)
        # Final question last: render() reads it from there.
        return tuple(chosen) + (final,)

    def render(self, units: Sequence[str]) -> Rendered:
        *demos, final = units
        category = self.items[final]["category"]
        head = ("Please answer the question at the end.\n\nHere are some examples of questions and answers"
                f" (category: {category}):\n\n")
        body = "".join(self.demonstration(u) for u in demos)
        tail = "\n\n" + TAIL_TEMPLATE.format(question=self.items[final]["question"])
        return Rendered(head, body, tail)

    def row_source(self, units: Sequence[str]) -> str:
        return DATASETS[re.split(r"[:/]", units[-1], maxsplit=1)[0]]

    def row_license(self, units: Sequence[str]) -> str:
        return "MIT"

    def redistributable(self, units: Sequence[str]) -> bool:
        # HLE is gated on the Hub and the RISE MATH subset states no licence: ship those as placeholders.
        return not any(u.startswith(("hle:", "math_rise:")) for u in units)
