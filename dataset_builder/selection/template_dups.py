"""Template-only near-duplicates: the same prompt with a courtesy prefix or suffix, a repeat marker, other spacing.

Embedding similarity misses them: a short prompt and the same prompt plus "Thank you so much!"
can sit below any cosine threshold that keeps distinct prompts apart. A text method catches them:
each text is normalised (lower case, runs of whitespace as one space) and cut into character
5-grams; MinHash LSH (``datasketch``, 128 permutations, Jaccard threshold 0.5) proposes pairs,
and a pair is a duplicate when the two differ only by a short template: at most ``MISSING``
(24, and at most 10%) of the shorter text's 5-grams are absent from the longer one, and the longer
one adds at most ``EXTRA`` (80) 5-grams, i.e. roughly a sentence of prefix or suffix. Both are
checked exactly on the 5-gram sets (LSH's randomness only decides which pairs are looked at,
never the verdict, and its hashes are seeded: the result is deterministic). Two prompts that
share a long passage but ask different questions of it add more than that and are kept. Of a
duplicate pair the row that comes first in pool order is kept.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import numpy as np

SHINGLE = 5
MISSING = 24
MISSING_SHARE = 0.1
EXTRA = 80
LSH_THRESHOLD = 0.5
PERMUTATIONS = 128
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class TemplateDuplicates:
    drop: np.ndarray                     # (N,) bool: rows dropped as a template variant of an earlier row
    kept_for: dict[int, int]             # dropped row -> the earlier kept row it repeats

    @property
    def count(self) -> int:
        return int(self.drop.sum())


def shingles(text: str) -> set[bytes]:
    normal = _SPACE.sub(" ", text.lower()).strip().encode("utf-8")
    if len(normal) <= SHINGLE:
        return {normal}
    return {normal[i:i + SHINGLE] for i in range(len(normal) - SHINGLE + 1)}


def _hash(data: bytes) -> int:
    return zlib.crc32(data)


def differ_by_template(a: set[bytes], b: set[bytes], extra: int = EXTRA) -> bool:
    """True when the larger 5-gram set is the smaller one plus at most ``extra`` 5-grams (and a few changed)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    missing = len(small - large)
    return missing <= min(MISSING, MISSING_SHARE * len(small)) and len(large - small) <= extra


def template_duplicates(texts: list[str], extra: int = EXTRA) -> TemplateDuplicates:
    """Rows whose text differs from an earlier kept row's only by a short template (``extra`` 5-grams; 0 disables)."""
    from datasketch import MinHash, MinHashLSH

    drop = np.zeros(len(texts), dtype=bool)
    kept_for: dict[int, int] = {}
    if extra <= 0 or len(texts) < 2:
        return TemplateDuplicates(drop, kept_for)
    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=PERMUTATIONS)
    sets: list[set[bytes]] = []
    for index, text in enumerate(texts):
        grams = shingles(text)
        sets.append(grams)
        signature = MinHash(num_perm=PERMUTATIONS, seed=1, hashfunc=_hash)
        signature.update_batch(sorted(grams))
        earlier = sorted(int(key) for key in lsh.query(signature))
        match = next((j for j in earlier if differ_by_template(grams, sets[j], extra)), None)
        if match is not None:
            drop[index] = True
            kept_for[index] = match
            continue
        lsh.insert(str(index), signature)
    return TemplateDuplicates(drop, kept_for)
