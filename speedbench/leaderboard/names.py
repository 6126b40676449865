"""Model and drafter names: normalised, and refused when they only look like a known id.

A name is first put in Unicode NFKC form (fullwidth ``ＭｙＭｏｄｅｌ`` becomes ``MyModel``: the
same characters, so the same name). Then it is compared with each known id character by character: a
name of the same length whose every differing character is a look-alike of the id's (Unicode's
confusables table, ``confusable_homoglyphs``, the maintained copy of the UTS #39 data), but whose
text is not that id (``meta-llаma`` with a Cyrillic ``а``) is
refused (``name.confusable``); so is a name mixing Latin letters with Cyrillic or Greek ones
(``name.mixed_script``), which no published model id does. Known ids are the names already on the
board plus ``KNOWN_IDS`` below.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from confusable_homoglyphs import categories, confusables

from speedbench.leaderboard.schema import BundleRejected, shown

# Ids a newcomer is most likely to imitate; the board's own entries are added at check time.
KNOWN_IDS = (
    "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-Next-80B-A3B",
    "openai/gpt-oss-20b", "openai/gpt-oss-120b", "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1",
    "nvidia/Llama-3.3-70B-Instruct-Eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
)
_CONFUSABLE_SCRIPTS = {"CYRILLIC", "GREEK"}  # letters that pass for Latin ones


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=4096)
def _look_alikes(ch: str) -> frozenset[str]:
    """The characters Unicode's confusables table lists as looking like ``ch``."""
    found = confusables.is_confusable(ch, greedy=True, preferred_aliases=[]) or []
    return frozenset(h["c"] for item in found for h in item.get("homoglyphs", ()))


def looks_alike(a: str, b: str) -> bool:
    """Same length, and each character that differs is a listed look-alike of the other one."""
    return len(a) == len(b) and all(x == y or y in _look_alikes(x) or x in _look_alikes(y) for x, y in zip(a, b))


def _scripts(text: str) -> set[str]:
    return {categories.alias(ch) for ch in text if ch.isalpha()}


def check_name(value: str, field: str, known: Iterable[str]) -> None:
    """Refuse ``value`` (already NFKC) when it mixes Latin with Cyrillic/Greek or imitates a known id."""
    for other in known:
        if other != value and looks_alike(value, normalise(other)):
            raise BundleRejected(f"metadata.{field} {shown(value)} looks like the known id {other!r} but is not it "
                                 "(look-alike characters); use the id itself", rule="name.confusable",
                                 where="submission.json", field=f"metadata.{field}")
    scripts = _scripts(value)
    if "LATIN" in scripts and scripts & _CONFUSABLE_SCRIPTS:
        odd = next(ch for ch in value if ch.isalpha() and categories.alias(ch) in _CONFUSABLE_SCRIPTS)
        raise BundleRejected(f"metadata.{field} {shown(value)} mixes Latin letters with {categories.alias(odd).title()} "
                             f"ones (U+{ord(odd):04X} {unicodedata.name(odd, '?')})", rule="name.mixed_script",
                             where="submission.json", field=f"metadata.{field}")
