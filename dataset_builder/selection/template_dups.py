"""Template-only near-duplicates: the same prompt with a courtesy prefix or suffix, a repeat marker, other spacing.

Embedding similarity misses them: a short prompt and the same prompt plus "Thank you so much!"
can sit below any cosine threshold that keeps distinct prompts apart. A text rule catches them.

**The verdict** (exact, on the whole prompt): two prompts with the same number of turns are
template variants when the shorter one, as a whole, appears in the longer one between word
boundaries (text compared in lower case, any run of whitespace as one space; turns joined with a
separator, so turns must line up), and what is left of the longer one once every copy of the
shorter is taken out is at most ``EXTRA`` (80) non-space characters: a prefix, a suffix, a repeat
marker, the question asked twice. Nothing of the shorter prompt may change. Prompts built from one
template but asking different things (BIG-Bench-Hard items sharing their instructions and answer
suffix, two questions on one passage, "since January" and "since February") each hold text the
other lacks and are kept; so are prompts that differ inside a word ("...\\rceil^2$" and
"...\\rceil$."). What the rule cannot tell from a template is a short whole-word clause added at
either end of another prompt ("Write a poem." and "Write a poem. Make it rhyme."): that pair is
merged when the clause is at most ``EXTRA`` characters.

**Which pairs are compared**: MinHash LSH (``datasketch``, 128 permutations, seeded hashes) over
character 5-grams of each prompt's head and tail proposes pairs with an estimated Jaccard
similarity of about ``LSH_THRESHOLD`` (0.2) or more. A prompt of n characters with t characters
added has a Jaccard similarity of about n / (n + t), so short prompts with long templates need a
low threshold. ``bench/template_variants.py`` measured on real prompts with an 80-character
template: found 84.0% / 97.0% / 100% of the variants of 20-39 / 40-79 / 80-159-character prompts
at 0.2, 46.8% / 86.5% / 99.6% at 0.3, 2.7% / 26.8% / 71.2% at 0.5; all pools of a default build
took 58 s at 0.2 and 59 s at 0.3. LSH only decides which pairs are looked at, never the verdict,
and its hashes are seeded: the result is deterministic. Of a variant pair the row that comes first
in pool order is kept.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SHINGLE = 5
EXTRA = 80
LSH_THRESHOLD = 0.2
PERMUTATIONS = 128
HEAD_CHARS, TAIL_CHARS = 2000, 1000       # what LSH reads of a long prompt (the verdict reads all of it)
TURN = "\x00turn\x00"                     # a token no text holds: turns must line up
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class TemplateDuplicates:
    drop: np.ndarray                     # (N,) bool: rows dropped as a template variant of an earlier row
    kept_for: dict[int, int]             # dropped row -> the earlier kept row it repeats

    @property
    def count(self) -> int:
        return int(self.drop.sum())


def normal(turns: Sequence[str] | str) -> str:
    """Lower case, whitespace runs as one space, turns joined by ``TURN`` as a word of its own."""
    turns = [turns] if isinstance(turns, str) else list(turns)
    return f" {TURN} ".join(" ".join(turn.lower().split()) for turn in turns)


def shingles(text: str) -> set[bytes]:
    normalised = _SPACE.sub(" ", text.lower()).strip()
    if len(normalised) > HEAD_CHARS + TAIL_CHARS:
        normalised = normalised[:HEAD_CHARS] + " " + normalised[-TAIL_CHARS:]
    data = normalised.encode("utf-8")
    if len(data) <= SHINGLE:
        return {data}
    return {data[i:i + SHINGLE] for i in range(len(data) - SHINGLE + 1)}


def _hash(data: bytes) -> int:
    return zlib.crc32(data)


def differ_by_template(a: str, b: str, extra: int = EXTRA) -> bool:
    """True when normalised ``a`` and ``b`` (see :func:`normal`) are one prompt, but for at most ``extra`` characters around it."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not short or short not in long or short.count(TURN) != long.count(TURN):
        return False
    whole = re.compile(rf"(?<!\S){re.escape(short)}(?!\S)")
    rest, copies = whole.subn(" ", long)
    return copies > 0 and len(rest) - rest.count(" ") <= extra


def template_duplicates(prompts: Sequence[Sequence[str] | str], extra: int = EXTRA) -> TemplateDuplicates:
    """Rows that are an earlier kept row plus a short template (``extra`` characters; 0 disables).

    ``prompts``: each row's turns (a string is one turn).
    """
    from datasketch import MinHash, MinHashLSH

    drop = np.zeros(len(prompts), dtype=bool)
    kept_for: dict[int, int] = {}
    if extra <= 0 or len(prompts) < 2:
        return TemplateDuplicates(drop, kept_for)
    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=PERMUTATIONS)
    normals: list[str] = []
    for index, turns in enumerate(prompts):
        normals.append(normal(turns))
        signature = MinHash(num_perm=PERMUTATIONS, seed=1, hashfunc=_hash)
        signature.update_batch(sorted(shingles(normals[-1])))
        earlier = sorted(int(key) for key in lsh.query(signature))
        match = next((j for j in earlier if differ_by_template(normals[index], normals[j], extra)), None)
        if match is not None:
            drop[index] = True
            kept_for[index] = match
            continue
        lsh.insert(str(index), signature)
    return TemplateDuplicates(drop, kept_for)
