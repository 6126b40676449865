"""The prompt formats of the published nvidia/SPEED-Bench rows, as the reference resolver builds them.

A published placeholder row is only reproducible if its text is rebuilt byte for byte the way the
reference's prepare step builds it (NVIDIA/Model-Optimizer ``examples/specdec_bench``, read at
a2fbac7; NeMo-Skills' ``speed-bench/prepare.py`` builds the same). The format strings below are
therefore data, not prose: each is the exact text of that format, and a change to any of them
changes every prompt built from it. They are the only text taken from the reference (Apache-2.0),
kept verbatim for interoperability with the published rows and attributed here; the rest of the
reference (its code) is not copied. The functions are this project's own implementation of the
documented formats; ``tests/dataset_builder/test_published_resolve.py`` checks them against a
separate implementation written in the test.

Token counts use tiktoken ``o200k_base`` (``speedbench.tokenization.o200k``), as the reference does.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

PAD = "Answer now please.\n"

# Ada-LEval's StackSelect instruction, as the reference sends it (head, then the question, then the answers).
STACKSELECT_HEAD = (
    "\nYou are an AI assistant. Your job is to find out the most helpful answer to a given question.\n"
    "Each time, you will be provided with a question and n answers to this question.\n"
    "Each answer begins with an 'A' and a number(e.g. A4), which represents its designation.\n"
    "You need to determine which answer is the most helpful one to the question.\n"
    "The case sample is shown below and you should give me the answer in the format exactly the same as the sample.\n"
    "\nHowever, you should NOT focus on the content of sample answer.\n"
    "\nSample Input (format only):\n"
    "\nThe question is given below.\nXXX(The content of question)\nPossible answers are given below.\n"
    "A1:\nXXX(The content of answer 1)\nA2:\nXXX(The content of answer 2)\n.\n.\n.\nAn:\nXXX(The content of answer n)\n"
    "Now the answers are over, please decide which answer is the most helpful one to the question. \n"
    "You must give me the designation of the MOST helpful answer and the reason why you choose this answer.\n"
    "For every other answer, you must give me the reason why you do not choose this answer.\n"
    "\nSample Output (format only):\n"
    "\nAnswer: The designation of the most helpful answer.(e.g. A4 means answer 4 is the most helpful answer)\n"
    "Explanation:\nA4: The reason why you choose this answer.\n"
    "A1: The reason why you do not choose this answer.\nA2: The reason why you do not choose this answer.\n"
    ".\n.\n.\nAn: The reason why you do not choose this answer.\n"
)
STACKSELECT_TAIL = (
    "Now the answers are over, please decide which answer is the most helpful one to the question. \n"
    "You must give me the designation of the MOST helpful answer and the reason why you choose this answer.\n"
    "For every other answer, you must give me the reason why you do not choose this answer.\n"
)

# TextSort: Ada-LEval's original instruction is swapped for one asking for the parts' text in order.
TEXTSORT_ORIGINAL = (
    "\n    You are an AI assistant. Your job is to sort multiple book sections into the correct order.\n"
    "    Each time, you will be provided with 4 pieces of text.\n"
    "    These texts form a continuous part of a book, but are provided in random order.\n"
    "    You need to find the correct order and return the answer in a string.\n"
    "    For example, if you output [4, 1, 3, 2], that means the correct order is: Part 4 -> Part 1 -> Part 3 -> Part 2.\n"
    "    You will also be provided with the neighboring paragraphs before and after the 4 pieces of texts. \n\n"
    "    The case sample is shown below and you should give me the answer in the format exactly the same as the sample. \n\n"
    "    However, you should NOT focus on the content of sample answer. \n\n"
    "    Please do NOT output any extra content. \n"
    "    Sample Input (format only): \n\n"
    "    Before: XXX (Text before the continuous book part)\n\n\n"
    "    Part 1: XXX\n\n\n    Part 2: XXX\n\n\n    Part 3: XXX\n\n\n    Part 4: XXX\n\n\n"
    "    After: XXX (Text after the continuous book part)\n\n\n"
    "    Sample Output (format only): \n\n"
    "    Answer: [4, 1, 3, 2] \n\n\n\n"
)
TEXTSORT_REPLACEMENT = (
    "\nYou are an AI assistant. Your job is to sort multiple book sections into the correct order.    \n"
    "    Each time, you will be provided with 4 pieces of text.\n"
    "    These texts form a continuous part of a book, but are provided in random order.    \n"
    "    You need to find the correct order and write the all the parts in the correct order.    \n"
    "    For example, if the correct order is: Part 4 -> Part 1 -> Part 3 -> Part 2, you need to answer with a "
    "continous text of all the parts in the correct order.\n"
    "    You should NOT change the text, just write it in the order it should appear.   \n"
    "    You will also be provided with the neighboring paragraphs before and after the 4 pieces of texts.\n"
    "    You should NOT output the before and after paragraphs, just the text in the correct order.\n"
    "    \n"
    "    The case sample is shown below and you should give me the answer in the format exactly the same as the sample. \n"
    "    \n"
    "    However, you should NOT focus on the content of sample answer. \n"
    "    \n"
    "    Please do NOT output any extra content. \n\n"
    "    Sample Input (format only): \n"
    "    \n"
    "    Before: BBB (Text before the continuous book part)\n"
    "    \n    \n"
    "    Part 1: XXX\n\n\n"
    "    Part 2: YYY\n    \n    \n"
    "    Part 3: ZZZ\n    \n    \n"
    "    Part 4: WWW\n\n\n"
    "    After: AAA (Text after the continuous book part)\n"
    "    \n"
    "    Sample Output (format only): \n"
    "    \n"
    "    Answer: \n\n\n"
    "    WWW\n\n    XXX\n\n    ZZZ\n\n    YYY\n    "
)

# BAMBOO dialogues (high-entropy tier): continue the dialogue(s) after naming the next speaker.
DIALOGUE_HEAD = (
    "\nI want you to act as a long dialogue completer. \n"
    "Given a long dialogue(s), your objectives are:\n"
    "1. Add one speaker mentioned in the past dialogue(s) at the end of the last sentence of each dialogue "
    "(between START CONTENT and END CONTENT) to complete the sentence and ensure its semantic integrity.  "
    "At here, the added word must be a person's name which appears in the dialogue.\n"
    "2. Continue the dialogue(s) with one or more speakers who appeared in the dialogue(s) before. "
    "Be coherent with the previous dialogue(s) and be creative in your response.\n"
    "The content of the dialogue(s) is given below.\n\n\n"
)

HLE_HEAD = ("Please answer the question below.\n\nHere are some examples of question and answer pairs in the "
            "category of {category}:\n\n")

CHATRAG = "Please give a full and complete answer for the questions. \n\nContext:\n{context}\n\nQuestion:\n{question}"

# MMLU-Pro's own chain-of-thought instruction (its paper and repository).
MMLU_PRO_HEAD = ('The following are multiple choice questions (with answers) about {subject}. Think step by step '
                 'and then finish your answer with "the answer is (X)" where X is the correct letter choice.\n\n')

# CoSER's role-playing prompt.
COSER = (
    "You are {character} from {book_name}.\n==={character}'s Profile===\n{character_profile}\n"
    "===Current Scenario===\n{scenario}\n===Information about the other Characters===\n"
    "{other_character_profiles_str}\n===Your Inner Thoughts===\n{motivation}\n\n===Requirements===\n"
    "Your output should include **thought**, **speech**, and **action**. Use [your thought]\n"
    "for thoughts, which others can't see, e.g. [I'm terrified, but I must appear strong.]. Use\n"
    "(your action) for actions, which others can see, such as (watches silently, trying to control\n"
    "her fear and anger)."
)
COSER_SEED = 12347
NO_MOTIVATION = "No motivation provided"


def encoder():
    from speedbench.tokenization.o200k import o200k
    return o200k()


def _encode(text: str) -> list[int]:
    return encoder().encode(text, disallowed_special=())


def pad_or_truncate(prompt: str, n_tokens: int, pad: str = PAD) -> str:
    """Exactly the first ``n_tokens`` o200k tokens of the prompt, padded with ``pad`` repeats when short."""
    tokens = _encode(prompt)
    if len(tokens) == n_tokens:
        return prompt
    if len(tokens) > n_tokens:
        return encoder().decode(tokens[:n_tokens])
    pad_length = len(_encode(pad))
    repeats = -(-(n_tokens - len(tokens)) // pad_length)     # ceiling division
    return encoder().decode(_encode(prompt + pad * repeats)[:n_tokens])


def dialogue_prompt(contents: Sequence[str]) -> str:
    blocks = [f"START CONTENT {number}\n\n{content}\n\nEND CONTENT" for number, content in enumerate(contents, 1)]
    return DIALOGUE_HEAD + "\n\n".join(blocks) + "\n"


def stackselect_prompt(question: str, answers: Sequence[str], right: str, n_tokens: int) -> str:
    """Question, then answers up to the token budget (the right one always kept), shuffled with seed 42."""
    head = STACKSELECT_HEAD + "The question is given below.\n" + question + "\n\nPossible answers are given below.\n"
    right_index = int(right.strip("A")) - 1
    used = (len(_encode(head)) + len(_encode(STACKSELECT_TAIL))
            + len(_encode(f"{right}:\n\n{answers[right_index]}\n\n")))
    last = 0
    for index, answer in enumerate(answers):
        if index == right_index:
            continue
        if used + len(_encode(f"A{index + 1}:\n\n{answer}\n\n")) > n_tokens:
            break
        last = index
    # Only the answers' budget is checked one at a time (not summed), as in the reference.
    kept = list(answers[:last + 1])
    if last < right_index:
        kept = [answers[right_index]] + kept
    shuffler = random.Random(42)
    shuffler.shuffle(kept)
    return head + "".join(f"A{number}:\n\n{answer}\n\n" for number, answer in enumerate(kept, 1)) + STACKSELECT_TAIL


def textsort_prompt(prompt: str) -> str:
    return prompt.replace(TEXTSORT_ORIGINAL, TEXTSORT_REPLACEMENT, 1)


def hle_prompt(category: str, question: str, demonstrations: Sequence[list[int]], n_tokens: int) -> str:
    """The intro, demonstrations (token lists, in order) while short of ``n_tokens``, then the question.

    The cut keeps ``n_tokens - len(question) + 1`` tokens before the question, so the prompt is one
    token over the bucket, as the reference builds it.
    """
    enc = encoder()
    tokens = enc.encode(HLE_HEAD.format(category=category))
    question_tokens = enc.encode(question)
    for demonstration in demonstrations:
        tokens += list(demonstration)
    return enc.decode(tokens[:n_tokens - len(question_tokens) + 1] + question_tokens)


def hle_demonstration(question: str, rationale: str) -> str:
    return "Question: " + question + "\n\nAnswer: " + rationale + "\n\n"


def hle_demonstrations_needed(category: str, question: str, n_tokens: int) -> int:
    """Tokens the demonstrations must add before the prompt reaches ``n_tokens``."""
    enc = encoder()
    return n_tokens - len(enc.encode(HLE_HEAD.format(category=category))) - len(enc.encode(question))


def mmlu_pro_turns(subject: str, questions: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """One turn per consecutive MMLU-Pro question; the first carries the instruction."""
    def block(question: str, options: Sequence[str]) -> str:
        lines = "\n".join(f"({chr(ord('A') + i)}) {option}" for i, option in enumerate(options))
        return f"Question: {question}\n\nOptions: {lines}\n\n"
    turns = [block(q, o) for q, o in questions]
    if turns:
        turns[0] = MMLU_PRO_HEAD.format(subject=subject) + turns[0]
    return turns


def chatrag_turns(contexts: Sequence[str], user_messages: Sequence[str]) -> list[str]:
    first = CHATRAG.format(context="\n\n".join(contexts), question=user_messages[0])
    return [first] + list(user_messages[1:])


def coser_prompt(scene: dict) -> tuple[str, bool]:
    """(the prompt, whether the inner thoughts came from the ``thought`` field).

    The played character is drawn with a fresh ``default_rng(12347)`` per scene, as in the
    reference. ``scene['character_profiles']`` must keep the key order (and the None entries) that
    loading the whole test set with ``datasets`` gives: the other characters are listed in that
    order. The reference reads ``key_characters[].motivation``; CoSER's current test set (the
    file it loads) names that field ``thought``, so the reference stops with a KeyError on every
    scene whose played character is a key character. We read ``thought`` there and say so.
    """
    import numpy as np

    character = str(np.random.default_rng(seed=COSER_SEED).choice(scene["major_characters"]))
    profiles = scene["character_profiles"]
    entry = next((c for c in scene["key_characters"] if c["name"] == character), None)
    from_thought = entry is not None and "motivation" not in entry
    motivation = NO_MOTIVATION if entry is None else entry["thought"] if from_thought else entry["motivation"]
    others = "\n\n".join(f"{name}: {profile}" for name, profile in profiles.items()
                         if name != character and profile is not None)
    text = COSER.format(character=character, character_profile=profiles[character], book_name=scene["book"],
                        scenario=scene["scenario"], other_character_profiles_str=others, motivation=motivation)
    return text, from_thought


def rolebench_turns(template: str, role: str, description: str, questions: Sequence[str]) -> list[str]:
    """The placeholder's template filled with the role, then the first question; later questions lose the address."""
    first = template.format(role_name=role, role_description_and_catchphrases=description) + "\n" + questions[0]
    return [first] + [q.removeprefix(f"{role}, ").removeprefix(f" {role},") for q in questions[1:]]
