"""Mixed entropy: StackSelect, pick the most helpful StackOverflow answer (after Ada-LEval).

A question comes with its own candidate answers; to reach the bucket length, answers to *other*
questions are added as distractors. The right answer is always kept: the whole answer list is
part of the never-cut instruction, sized from exact per-answer token counts to stay under N, and
the fit only pads. Answers are shown in a seeded random order labelled A1..An.

Reuse: distractors are drawn without replacement per bucket while they last, then reshuffled
(seeded); each question is the subject of at most one prompt per bucket.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cached_property

from speedbench.dataset_builder.throughput.base import Rendered, TaskType, UnitStream, stable_rng
from speedbench.dataset_builder.throughput.sources import json_document
from speedbench.tokenization.o200k import count_tokens

HEAD = ("You are given a question from StackOverflow and several candidate answers, each labelled "
        "with an A and a number (e.g. A4). Decide which answer is the most helpful one for the question.\n"
        "Give the label of the most helpful answer and the reason you chose it; then, for every other "
        "answer, give the reason you did not choose it.\n\nQuestion:\n")
TAIL = ("\n\nThe candidate answers are over. Which answer is the most helpful one? Reply with its label "
        "and your reasons, then your reasons for every other answer.\n")
# Per-answer label and separators, and a margin for token merges at the joins.
LABEL_TOKENS = 6
MARGIN_TOKENS = 24


class AnswerSelection(TaskType):
    name = "answer_selection"
    tier = "mixed"
    source = "AdaLEval/stackselect"
    license = "CC-BY-SA-4.0"
    reuses_content = True

    @cached_property
    def questions(self) -> dict[str, dict]:
        records = json_document(str(self.sources / "adaleval/stackselect_1k.json"))
        questions = {}
        for r in records:
            answers = r["all_answers"]
            right = int(str(r["answer"]).strip().lstrip("A")) - 1
            questions[str(r["question_id"])] = {"question": r["question"].strip(), "answers": answers,
                                                "right": right}
        return questions

    def unit_text(self, unit: str) -> str:
        qid, _, answer = unit.partition("/A")
        if answer:
            return self.questions[qid]["answers"][int(answer) - 1].strip()
        return self.questions[qid]["question"]

    def capacity(self, n_tokens: int) -> int | None:
        return None  # distractors are reused once they run out

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        question_ids = sorted(self.questions)
        rng.shuffle(question_ids)
        distractors = self.distractor_stream(rng)
        selections = []
        for qid in question_ids:
            if len(selections) == count:
                break
            units = self.select_for(qid, n_tokens, distractors)
            if units is not None:
                selections.append(units)
        return selections

    def distractor_stream(self, rng: random.Random) -> UnitStream:
        answers = [f"{q}/A{i + 1}" for q in sorted(self.questions) for i in range(len(self.questions[q]["answers"]))]
        return UnitStream(answers, rng, cycle=True)

    def select_for(self, qid: str, n_tokens: int, distractors: UnitStream) -> tuple[str, ...] | None:
        """Question ``qid`` with its right answer, its other answers and distractors up to N (None if it cannot fit)."""
        q = self.questions[qid]
        fixed = count_tokens(HEAD) + count_tokens(TAIL) + MARGIN_TOKENS
        right = f"{qid}/A{q['right'] + 1}"
        budget = n_tokens - fixed - self.unit_tokens(qid) - self.unit_tokens(right) - LABEL_TOKENS
        if budget < 0:
            return None  # question and right answer alone exceed the bucket
        chosen = [right]
        for i in range(len(q["answers"])):
            unit = f"{qid}/A{i + 1}"
            if unit != right and self.unit_tokens(unit) + LABEL_TOKENS <= budget:
                chosen.append(unit)
                budget -= self.unit_tokens(unit) + LABEL_TOKENS
        own = {f"{qid}/A{i + 1}" for i in range(len(q["answers"]))}
        misses = 0
        while budget > LABEL_TOKENS and misses < 50:
            unit = distractors.draw(own | set(chosen))
            if unit is None:
                break
            cost = self.unit_tokens(unit) + LABEL_TOKENS
            if cost <= budget:
                chosen.append(unit)
                budget -= cost
            else:
                misses += 1
        # The estimate ignores merges at the joins: check the real count, drop distractors if over.
        while len(chosen) > 1:
            rendered = self.render((qid, *chosen))
            if count_tokens(rendered.head + rendered.tail) <= n_tokens:
                break
            chosen.pop()
        return (qid, *chosen)

    def render(self, units: Sequence[str]) -> Rendered:
        qid, *answers = units
        order = list(answers)
        stable_rng("answer_selection", *units).shuffle(order)
        listed = "".join(f"A{i + 1}:\n{self.unit_text(u)}\n\n" for i, u in enumerate(order))
        head = f"{HEAD}{self.unit_text(qid)}\n\nCandidate answers:\n\n{listed}"
        return Rendered(head, "", TAIL)

    def redistributable(self, units: Sequence[str]) -> bool:
        return False  # CC BY-SA share-alike content; the reference ships the mixed tier as placeholders
