"""Which published source a placeholder row names, and where in that source (``src_id``, v1.0 and v1.1).

The published rows name their source in ``source`` (a Hub id, or the URL of the file the reference
loads) and the place in it in ``src_id``. The reference resolver finds the source by the Hub id
appearing in ``source`` (first match in ``SOURCES`` order) and reads ``src_id`` per source:

| source | ``src_id`` (v1.0) | read as |
|---|---|---|
| BAMBOO | ``..._<row>_<row>...`` | every ``_<digits>``: rows of the file named by ``source`` |
| CNN/DailyMail | the article id | equal to ``id`` |
| HLE | the question id | equal to ``id`` |
| LiveCodeBench | the question id | equal to ``question_id`` |
| Code Contests | the problem name | equal to ``name`` |
| MT-Bench-101 | ``..._<row>`` | the part after the last ``_``: row of the file |
| OPUS-100 | ``<x>_<pair>_<row>`` | the language pair config and its row |
| ChatRAG-Bench | ``..._<row>`` | row of hybridial + sqa, concatenated |
| MMLU-Pro | ``...(<first>, ...`` | first of ``len(turns)`` consecutive test rows |
| StackSelect | the question id | equal to ``question_id`` in the file named by ``source`` |
| TextSort | ``<x>_<row>...`` | the second ``_`` field: row of the file |
| RoleBench | ``<x>_<subset>_<row>_<row>...`` | the subset's role_specific test file; one row per turn |
| CoSER | ``<x>_<row>...`` | the second ``_`` field: scene of the test set |

Version 1.1 of the card rewrote the Throughput ``src_id`` (BAMBOO, HLE, StackSelect, TextSort)
"to allow faster reconstruction"; its exact layout is not in the reference code we read, so the
Throughput ids are also accepted embedded in a longer string: every 24-hex HLE id in order (the
first is the question; any further ones are taken as the demonstrations, in order), the first run
of digits that is a StackSelect question id, the ``_<row>`` indices for BAMBOO and TextSort.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# (key, the Hub id the reference looks for in `source`), in the reference's order of checks.
SOURCES = (
    ("bamboo", "RUCAIBox/BAMBOO"), ("cnn_dailymail", "abisee/cnn_dailymail"), ("hle", "cais/hle"),
    ("livecodebench", "livecodebench/code_generation_lite"), ("code_contests", "deepmind/code_contests"),
    ("mtbench101", "mtbench101/mt-bench-101"), ("opus100", "Helsinki-NLP/opus-100"),
    ("chatrag", "nvidia/ChatRAG-Bench"), ("mmlu_pro", "TIGER-Lab/MMLU-Pro"),
    ("stackselect", "AdaLEval/stackselect"), ("textsort", "AdaLEval/textsort"),
    ("rolebench", "ZenMoore/RoleBench"), ("coser", "Neph0s/CoSER"),
)
HUB_ID = dict(SOURCES)
HLE_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{24}(?![0-9a-f])")
ROW = re.compile(r"_(\d+)")


class SrcIdError(LookupError):
    """A ``src_id`` (or ``source``) that does not name a place in its source."""


def source_key(source: str) -> str | None:
    """The source a published row comes from (None: not one the reference resolver knows)."""
    lowered = (source or "").lower()
    for key, hub_id in SOURCES:
        if hub_id.lower() in lowered:
            return key
    return None


def file_name(source: str) -> str:
    """The file a URL-valued ``source`` names (``.../showspred_4k.jsonl`` -> ``showspred_4k.jsonl``)."""
    return source.rstrip("/").rsplit("/", 1)[-1]


def _int(text: str, src_id: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise SrcIdError(f"src_id {src_id!r}: {what} {text!r} is not a row number") from None


def rows_after_underscores(src_id: str) -> list[int]:
    """Every ``_<digits>`` in ``src_id`` (BAMBOO rows, RoleBench rows)."""
    rows = [int(m) for m in ROW.findall(src_id)]
    if not rows:
        raise SrcIdError(f"src_id {src_id!r}: no '_<row>' index")
    return rows


def last_field_row(src_id: str) -> int:
    """The row after the last ``_`` (MT-Bench-101, ChatRAG-Bench)."""
    if "_" not in src_id:
        raise SrcIdError(f"src_id {src_id!r}: expected '<name>_<row>'")
    return _int(src_id.rsplit("_", 1)[1], src_id, "the part after the last '_'")


def second_field_row(src_id: str) -> int:
    """The row in the second ``_`` field (CoSER, TextSort v1.0); v1.1: the first ``_<row>``."""
    parts = src_id.split("_")
    if len(parts) < 2:
        raise SrcIdError(f"src_id {src_id!r}: expected '<name>_<row>'")
    if parts[1].isdigit():
        return int(parts[1])
    return rows_after_underscores(src_id)[0]


@dataclass(frozen=True)
class OpusId:
    pair: str
    row: int


def opus_id(src_id: str) -> OpusId:
    parts = src_id.split("_")
    if len(parts) != 3:
        raise SrcIdError(f"src_id {src_id!r}: expected '<name>_<language pair>_<row>'")
    return OpusId(parts[1], _int(parts[2], src_id, "the row"))


def mmlu_pro_first_row(src_id: str) -> int:
    if "(" not in src_id:
        raise SrcIdError(f"src_id {src_id!r}: expected the first row as '(<row>, ...'")
    return _int(src_id.split("(", 1)[1].split(",", 1)[0].strip(" )"), src_id, "the first row")


@dataclass(frozen=True)
class RoleBenchId:
    subset: str
    rows: tuple[int, ...]


def rolebench_id(src_id: str, n_turns: int) -> RoleBenchId:
    parts = src_id.split("_")
    if len(parts) < 3:
        raise SrcIdError(f"src_id {src_id!r}: expected '<name>_<subset>_<row>[_<row>...]'")
    return RoleBenchId(parts[1], tuple(rows_after_underscores(src_id)[:n_turns]))


def hle_ids(src_id: str) -> list[str]:
    """v1.0: the bare id; v1.1: every 24-hex id inside the string, in order."""
    if HLE_ID.fullmatch(src_id.strip()):
        return [src_id.strip()]
    found = HLE_ID.findall(src_id)
    if not found:
        raise SrcIdError(f"src_id {src_id!r}: no HLE question id (24 hex characters)")
    return found


def stackselect_id(src_id: str, known: set[str] | dict) -> str:
    """v1.0: the bare question id; v1.1: the first run of digits that is a known question id."""
    if src_id.strip() in known:
        return src_id.strip()
    for digits in re.findall(r"\d+", src_id):
        if digits in known:
            return digits
    raise SrcIdError(f"src_id {src_id!r}: no StackSelect question id of the file")
