"""The board's ``metrics`` document (:func:`speedbench.leaderboard.recompute.recompute_metrics`) as
typed dataclasses that the board reads by attribute.

The document is stored in SQLite and read back for every page; a stored row may be damaged (an
old format, a hand edit, a bad restore), and the board must still render it. So :meth:`read` is
lenient where :class:`speedbench.analysis.results_types.Section` is strict: it never raises. A
section that is not an object (or a list that is not a list) reads as empty, a list item that is not
an object is left out, and a figure keeps whatever value was stored (the board's cells coerce it:
a finite number or empty, ``speedbench.leaderboard.board._round``). Keys a class does not declare
are ignored: the board does not show them.

What was damaged is not hidden, though: ``read(data, problems)`` appends to ``problems`` each
section whose shape is wrong (an object section that is neither an object nor empty, a list that
is not a list of objects, a CI that is not two values), and the board shows such an entry as an
error row (``board.safe_rows``), as it did when it read the dicts by key and one of them raised.

Adding a field: declare it on the class (``Any`` with default ``None`` for a figure, a
:class:`Doc` subclass, ``list[Doc]`` or ``dict[str, Doc]`` for a nested object); the recompute puts
it in the dict it builds; the board reads the attribute.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args, get_origin


class MetricsShapeError(ValueError):
    """A stored metrics document with a section of the wrong shape (the message names it)."""


@dataclass
class Doc:
    """One JSON object of the stored document, read leniently (see the module docstring)."""

    _HINTS: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def _fields(cls) -> dict[str, Any]:
        if cls not in Doc._HINTS:
            hints = typing.get_type_hints(cls)
            Doc._HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
        return Doc._HINTS[cls]

    _PAIRS: ClassVar[tuple[str, ...]] = ()  # the CI fields: two values, or empty

    @classmethod
    def read(cls, data: Any, problems: list[str] | None = None, where: str = "metrics") -> Any:
        """The object's declared fields (an empty object when ``data`` is not a JSON object); the
        sections of the wrong shape are appended to ``problems`` when given."""
        problems = [] if problems is None else problems
        if data and not isinstance(data, dict):  # an empty value ([], "", null) is an empty section
            problems.append(f"{where}: not an object")
        data = data if isinstance(data, dict) else {}
        for name in cls._PAIRS:
            ci = data.get(name)
            if ci and (not isinstance(ci, (list, str)) or len(ci) < 2):
                problems.append(f"{where}.{name}: not two values")
        return cls(**{name: _lenient(data[name], kind, problems, f"{where}.{name}")
                      for name, kind in cls._fields().items() if name in data})


def _objects(value: Any) -> bool:
    """Whether iterating ``value`` gives only objects (an empty list, object or text gives none)."""
    return isinstance(value, (list, dict, str)) and all(isinstance(item, dict) for item in value)


def _lenient(value: Any, kind: Any, problems: list[str], where: str) -> Any:
    """``value`` read as ``kind``: nested objects parsed, wrong containers empty, figures as stored."""
    origin, args = get_origin(kind), get_args(kind)
    if isinstance(kind, type) and issubclass(kind, Doc):
        return kind.read(value, problems, where)
    if origin is list and args and issubclass(args[0], Doc):
        if not _objects(value):
            problems.append(f"{where}: not a list of objects")
        return [args[0].read(item, problems, f"{where}[{i}]") for i, item in enumerate(value)
                if isinstance(item, dict)] if isinstance(value, list) else []
    if origin is dict and len(args) == 2 and issubclass(args[1], Doc):
        if value and not isinstance(value, dict):
            problems.append(f"{where}: not an object")
        # a category whose figures are not an object is not shown (the others are)
        return {k: args[1].read(v, problems, f"{where}.{k}") for k, v in value.items()
                if isinstance(v, dict)} if isinstance(value, dict) else {}
    return value


def _pair(ci: Any) -> tuple[Any, Any]:
    """``(low, high)`` of a stored CI; ``(None, None)`` when it is not a list of two."""
    return (ci[0], ci[1]) if isinstance(ci, (list, tuple)) and len(ci) >= 2 else (None, None)


@dataclass
class CategoryAL(Doc):
    """AL of one category, or overall (the keys of ``recompute._AL_KEYS`` the board shows)."""

    acceptance_length: Any = None
    acceptance_length_ci: Any = None
    acceptance_length_request_weighted: Any = None
    _PAIRS: ClassVar[tuple[str, ...]] = ("acceptance_length_ci",)

    @property
    def ci(self) -> tuple[Any, Any]:
        return _pair(self.acceptance_length_ci)


@dataclass
class BoardAcceptance(CategoryAL):
    """The entry's AL section: overall figures and ``per_category``."""

    per_category: dict[str, CategoryAL] = field(default_factory=dict)
    # the draft length step by step (recompute keeps them): the K column's "dynamic 1-4"
    variable_draft_length: Any = None
    draft_length_histogram: Any = None


@dataclass
class BoardPoint(Doc):
    """One load point of one run (``recompute._point_figures``)."""

    role: Any = None
    isl: Any = None
    concurrency: Any = None
    output_tps: Any = None
    user_tps_p50: Any = None
    client_lagged_share: Any = None


@dataclass
class BoardSpeedup(Doc):
    """One SD load point against its baseline (``recompute._speedup``)."""

    isl: Any = None
    concurrency: Any = None
    speedup_measured: Any = None


@dataclass
class BoardMetrics(Doc):
    """An entry's whole ``metrics`` document; ``losslessness`` and ``phases`` go to their own cells
    (:func:`~speedbench.leaderboard.lossless.lossless_cell`, :func:`~speedbench.leaderboard.phases.phase_cells`)
    as stored, those being lenient themselves."""

    acceptance: BoardAcceptance = field(default_factory=BoardAcceptance)
    points: list[BoardPoint] = field(default_factory=list)
    speedup: list[BoardSpeedup] = field(default_factory=list)
    losslessness: Any = None
    phases: Any = None


@dataclass
class PairedAL(Doc):
    """AL difference (B - A) of two entries over their shared prompts (``compare_runs``, one category)."""

    value_a: Any = None
    value_b: Any = None
    difference: Any = None
    difference_ci: Any = None
    num_paired: Any = None
    _PAIRS: ClassVar[tuple[str, ...]] = ("difference_ci",)

    @property
    def ci(self) -> tuple[Any, Any]:
        return _pair(self.difference_ci)


@dataclass
class PairedComparison(Doc):
    acceptance_length: PairedAL = field(default_factory=PairedAL)
