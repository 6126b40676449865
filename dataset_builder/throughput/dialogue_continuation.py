"""High entropy: continue long dialogues (BAMBOO TV-show and meeting transcripts, QMSum meetings).

As in the reference, several dialogues fill the context, each between START CONTENT / END
CONTENT markers; the model names the speaker of the last line of each (BAMBOO's texts end in
``said by``) and continues the dialogue creatively. QMSum meeting transcripts, written in the
same ``"line" said by Speaker`` form, add content for the long buckets.

Reuse: dialogues are drawn without replacement per bucket while they last, then reshuffled
(seeded); at 16k/32k dialogues repeat across prompts (reported in the card).
"""
from __future__ import annotations

import ast
import random
from collections.abc import Sequence
from functools import cached_property

from speedbench.dataset_builder.throughput.base import Rendered, TaskType, UnitStream
from speedbench.dataset_builder.throughput.sources import jsonl_records

BAMBOO_FILES = ("showspred_4k", "showspred_16k", "meetingpred_4k")
QMSUM_FILES = ("test", "val")
HEAD = ("I want you to act as a long dialogue completer. Below are one or more long dialogues, each "
        "between START CONTENT and END CONTENT (the last one may stop early). Your objectives:\n"
        "1. Complete the last sentence of each dialogue by adding the name of its speaker, a person "
        "who appears earlier in that dialogue.\n"
        "2. Continue the last dialogue with one or more of the speakers who appeared before. Stay "
        "coherent with what was said and be creative.\n\nThe dialogues:\n\n")
TAIL = ("\n\n[The dialogues stop here.]\n\nNow complete the last sentence of each dialogue with its "
        "speaker's name, then continue the last dialogue for at least 600 words.\n")


class DialogueContinuation(TaskType):
    name = "dialogue_continuation"
    tier = "high_entropy"
    source = "RUCAIBox/BAMBOO"
    license = "MIT"
    reuses_content = True

    @cached_property
    def dialogues(self) -> dict[str, str]:
        dialogues = {}
        for name in BAMBOO_FILES:
            for i, r in enumerate(jsonl_records(str(self.sources / f"bamboo/{name}.jsonl"))):
                dialogues[f"bamboo/{name}:{i}"] = r["content"]
        for name in QMSUM_FILES:
            for i, r in enumerate(jsonl_records(str(self.sources / f"summarization/qmsum/{name}.jsonl"))):
                turns = r["meeting_transcripts"]
                if isinstance(turns, str):
                    turns = ast.literal_eval(turns)
                lines = [f"\"{t['content'].strip()}\" said by {t['speaker'].strip()}" for t in turns]
                # End like BAMBOO: the last speaker is left for the model to name.
                dialogues[f"qmsum/{name}:{i}"] = "\n".join(lines).rsplit(" said by ", 1)[0] + " said by "
        return dialogues

    def unit_text(self, unit: str) -> str:
        return self.dialogues[unit]

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        stream = UnitStream(sorted(self.dialogues), rng, cycle=True)
        selections = []
        for _ in range(count):
            chosen: list[str] = []
            tokens = 0
            while tokens < n_tokens:
                unit = stream.draw(set(chosen))
                if unit is None:
                    break
                chosen.append(unit)
                tokens += self.unit_tokens(unit) + 8
            selections.append(tuple(chosen))
        return selections

    def render(self, units: Sequence[str]) -> Rendered:
        body = "\n\n".join(f"START CONTENT {i + 1}\n\n{self.dialogues[u]}\n\nEND CONTENT"
                           for i, u in enumerate(units))
        return Rendered(HEAD, body, TAIL)

    def row_source(self, units: Sequence[str]) -> str:
        return "Yale-LILY/QMSum" if units[0].startswith("qmsum/") else "RUCAIBox/BAMBOO"
