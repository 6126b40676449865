"""Strict JSON for a stranger's upload: what :func:`json.loads` lets through that a hostile bundle could use.

:func:`loads_strict` refuses NaN, Infinity, numbers that overflow, integers outside the signed
64-bit range, duplicate keys, nesting deeper than ``MAX_JSON_DEPTH`` and lone surrogates (text
that cannot be written as UTF-8), each naming the member, line and field. ``records.jsonl`` is
read one line at a time (:func:`iter_jsonl`): only one line's objects exist at once, and a line
longer than ``max_line_bytes`` is refused.
"""
from __future__ import annotations

import json
import math
import re

from speedbench.leaderboard.archive import ArchiveLimits, Member, as_member
from speedbench.leaderboard.schema import BundleRejected

MAX_INT = 2**63 - 1  # what SQLite, numpy int64 and every engine's counters can hold
MAX_JSON_DEPTH = 32


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {text}")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _FieldError("json.duplicate_key", duplicate, "key appears twice in one object (ambiguous)")
    return out


class _FieldError(ValueError):
    def __init__(self, rule: str, field: str, problem: str):
        super().__init__(problem)
        self.rule, self.field, self.problem = rule, field, problem


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_values(value, path: str, depth: int, check_text: bool) -> None:
    """Walk a parsed value: integers in the 64-bit range, text encodable as UTF-8, bounded nesting."""
    kind = type(value)
    if kind is int:
        if not -MAX_INT <= value <= MAX_INT:
            raise _FieldError("json.int_range", path, "integer outside the signed 64-bit range")
    elif kind is str:
        if check_text:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _FieldError("json.surrogate", path,
                                  "lone surrogate: text must be valid Unicode (UTF-8 encodable)") from None
    elif kind is list:
        if depth >= MAX_JSON_DEPTH:
            raise _FieldError("json.nesting", path, f"nested deeper than {MAX_JSON_DEPTH} levels")
        if value and all(type(v) is int for v in value):  # the common case: chunk lists, in C
            if max(value) > MAX_INT or min(value) < -MAX_INT:
                index = next(i for i, v in enumerate(value) if not -MAX_INT <= v <= MAX_INT)
                raise _FieldError("json.int_range", f"{path}[{index}]", "integer outside the signed 64-bit range")
            return
        for i, item in enumerate(value):
            _check_values(item, f"{path}[{i}]", depth + 1, check_text)
    elif kind is dict:
        if depth >= MAX_JSON_DEPTH:
            raise _FieldError("json.nesting", path, f"nested deeper than {MAX_JSON_DEPTH} levels")
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if check_text:
                _check_values(key, child, depth + 1, True)
            _check_values(item, child, depth + 1, check_text)


def loads_strict(text, where: str):
    """``json.loads`` that refuses what a hostile upload could use (see the module docstring).

    Every rejection names ``where`` (member and line) and, when it is known, the field."""
    try:
        if isinstance(text, Member):
            text = bytes(text)
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                           object_pairs_hook=_no_duplicate_keys)
        _check_values(value, "", 0, bool(_SURROGATE_ESCAPE.search(text)))
        return value
    except UnicodeDecodeError as exc:
        raise BundleRejected(f"not UTF-8 text ({exc.reason})", rule="json.not_utf8", where=where) from None
    except _FieldError as exc:
        raise BundleRejected(exc.problem, rule=exc.rule, where=where, field=exc.field or "(top level)") from None
    except RecursionError:
        raise BundleRejected(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", rule="json.nesting",
                             where=where) from None
    except ValueError as exc:
        rule = "json.non_finite" if "non-finite" in str(exc) else "json.invalid"
        raise BundleRejected(f"invalid JSON ({str(exc)[:200]})", rule=rule, where=where) from None


def iter_jsonl(data, where: str, max_line_bytes: int = ArchiveLimits.max_line_bytes):
    """Each non-empty line of a JSONL member, parsed strictly, one line at a time; errors name the line."""
    for number, line in as_member(data).lines(max_line_bytes, where):
        if line.strip():
            yield number, loads_strict(line, f"{where} line {number}")
