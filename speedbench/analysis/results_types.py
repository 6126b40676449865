"""``results.json`` as typed dataclasses: what the analysis returns and what its readers read by attribute.

:class:`RunResults` holds a run's :class:`PointFigures`; each point its acceptance sources
(:class:`AcceptanceFigures`, per category too), its :class:`LatencyFigures` (per category too),
:class:`Totals` and :class:`ClientTiming`. ``from_dict(data, where)`` parses a JSON object (one the
analysis just computed, or one read from disk: a stranger's bundle) and raises
:class:`ResultsFormatError` naming the field (``results.json points[0].latency.ttft.p50: expected
a number, got 'x'``); ``to_dict()`` gives the object back with its keys in the order they came, so
``results.json`` written from these types is byte-identical to the one written from the dicts.

Keys a class does not declare are kept (``extra``) and written back in their place: the figures
nobody reads by attribute stay in the file without a field each.

Adding a field: declare it on the class, with its type and a default (``None``, or a
``field(default_factory=...)``) when older files lack it; the analysis that computes it puts it
in the dict it builds (its place there is its place in the file); readers read the attribute.
Types understood: ``int``, ``float`` (an int is accepted), ``str``, ``bool``, ``list``, ``dict``,
``X | None``, a :class:`Section` subclass, ``list[Section]`` and ``dict[str, Section]``.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args, get_origin


class ResultsFormatError(ValueError):
    """A results object that does not hold the declared types; the message names the field."""


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
          dict: "an object"}


def _parse(value: Any, kind: Any, where: str) -> Any:
    """``value`` checked against the annotation ``kind`` (sections parsed; other values kept as they are)."""
    origin, args = get_origin(kind), get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        for option in options[:-1]:  # the first that fits (``Spread | float``: an object is a Spread)
            try:
                return _parse(value, option, where)
            except ResultsFormatError:
                pass
        return _parse(value, options[-1], where)
    if isinstance(kind, type) and issubclass(kind, Section):
        return kind.from_dict(value, where)
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], Section):
        _expect(value, list, where)
        return [args[0].from_dict(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], Section):
        _expect(value, dict, where)
        return {key: args[1].from_dict(item, f"{where}.{key}") for key, item in value.items()}
    _expect(value, origin or kind, where)
    return value


def _expect(value: Any, kind: Any, where: str) -> None:
    if kind is Any:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # a count written as 12.0 is still a count (kept as written: the file stays byte-identical)
    ok = number if kind is float else (number and float(value).is_integer()) if kind is int else \
        isinstance(value, kind)
    if not ok:
        raise ResultsFormatError(f"{where}: expected {_NAMES.get(kind, kind.__name__)}, got {value!r:.80}")


def _dump(value: Any) -> Any:
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@dataclass
class Section:
    """One JSON object of ``results.json``: declared fields typed, other keys kept in ``extra``."""

    extra: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)
    key_order: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)
    _HINTS: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def _fields(cls) -> dict[str, Any]:
        if cls not in Section._HINTS:
            hints = typing.get_type_hints(cls)
            Section._HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)
                                   if f.name not in ("extra", "key_order")}
        return Section._HINTS[cls]

    @classmethod
    def from_dict(cls, data: Any, where: str = "results"):
        if not isinstance(data, dict):
            raise ResultsFormatError(f"{where}: expected an object, got {data!r:.80}")
        declared = cls._fields()
        values = {}
        for name, kind in declared.items():
            if name in data:
                values[name] = _parse(data[name], kind, f"{where}.{name}")
            elif _required(cls, name):
                raise ResultsFormatError(f"{where}.{name}: missing")
        return cls(**values, extra={k: v for k, v in data.items() if k not in declared}, key_order=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: keys in the order they came (declared fields first when built here)."""
        declared = self._fields()
        order = self.key_order or (*declared, *self.extra)
        out = {key: _dump(getattr(self, key) if key in declared else self.extra[key]) for key in order}
        for key, value in self.extra.items():  # keys added after parsing
            out.setdefault(key, _dump(value))
        return out


def _required(cls: type, name: str) -> bool:
    spec = next(f for f in dataclasses.fields(cls) if f.name == name)
    return spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING


@dataclass
class AcceptanceFigures(Section):
    """One acceptance source's figures (``speedbench.metrics.acceptance``), overall or of one category."""

    acceptance_length: float | None = None
    acceptance_length_ci: list | None = None
    acceptance_length_request_weighted: float | None = None
    acceptance_length_drafted: float | None = None
    tokens_per_decode_step: float | None = None
    tokens_per_decode_step_ci: list | None = None
    mean_acceptance_rate: float | None = None
    conditional_acceptance_rate: list | None = None
    conditional_acceptance_rate_ci: list | None = None
    marginal_acceptance_rate: list | None = None
    draft_length: int | None = None
    num_requests: int | None = None
    num_steps: int | None = None
    num_drafted_steps: int | None = None
    num_draft_tokens: int | None = None
    num_accepted_tokens: int | None = None
    step_kind: str | None = None
    chunks_are_steps: bool | None = None
    trim_report: dict | None = None
    # the draft length step by step (speedbench.metrics.acceptance.per_step): K as a string -> steps
    draft_length_histogram: dict | None = None
    variable_draft_length: bool | None = None
    position_drafted_steps: list | None = None
    position_reached_steps: list | None = None
    position_accepted_steps: list | None = None
    per_position_null_reason: str | None = None
    drafted_tokens_null_reason: str | None = None
    per_category: dict[str, AcceptanceFigures] = field(default_factory=dict)

    @property
    def ci(self) -> tuple[float | None, float | None]:
        """``(low, high)`` of AL's CI, ``(None, None)`` without one."""
        low, high = self.acceptance_length_ci or (None, None)
        return low, high

    @property
    def drafted_al(self) -> float | None:
        """AL over drafted steps only: its own figure, or AL when the steps counted are drafted ones."""
        if self.acceptance_length_drafted is not None:
            return self.acceptance_length_drafted
        return self.acceptance_length if self.step_kind == "drafted" else None

    @property
    def merged_chunks(self) -> int:
        return (self.trim_report or {}).get("num_merged_chunks", 0)


@dataclass
class Spread(Section):
    """A latency quantity's summary over requests or steps (seconds)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


@dataclass
class LatencyFigures(Section):
    """A point's (or one category's) latency and throughput (``speedbench.metrics.latency``)."""

    num_requests: int | None = None
    total_output_tokens: int | None = None
    run_span: float | None = None
    output_tps: float | None = None
    request_throughput: float | None = None
    achieved_concurrency: float | None = None
    ttft: Spread | None = None
    e2e: Spread | None = None
    step_latency: Spread | None = None
    tpot: Spread | None = None
    tpot_request_mean: Spread | float | None = None
    user_tps: Spread | None = None
    per_category: dict[str, LatencyFigures] = field(default_factory=dict)

    def spread(self, quantity: str) -> Spread:
        """``ttft``, ``e2e``, ``step_latency``, ``tpot`` or ``user_tps`` (an empty one when absent)."""
        return getattr(self, quantity) or Spread()


@dataclass
class Totals(Section):
    """What a point's successful records add up to (``speedbench.analysis.run_results``)."""

    requests: int | None = None
    ok: int | None = None
    later_turns: int | None = None
    later_turn_answers_mismatched: int | None = None


@dataclass
class ClientTiming(Section):
    """The client's own timing health (``speedbench.metrics.client_timing``)."""

    client_lagged_share: float | None = None
    chunks_sharing_a_read_share: float | None = None
    loop_lag_ms: dict | None = None


@dataclass
class PointFigures(Section):
    """One load point of ``results.json`` (``speedbench.analysis.run_results.analyse_point``)."""

    run_point: str
    num_requests: int
    num_errors: int
    load_shape: str | None = None
    requested_concurrency: int | None = None
    request_rate: float | None = None
    achieved_concurrency: float | None = None
    achieved_concurrency_full_request: float | None = None
    errors_by_kind: dict = field(default_factory=dict)
    num_warmup_excluded: int = 0
    finish_reasons: dict = field(default_factory=dict)
    draft_length: int | None = None
    draft_length_given: bool = False
    variable_draft_length: bool | None = None
    draft_length_histogram: dict | None = None
    primary_acceptance_source: str | None = None
    acceptance: dict[str, AcceptanceFigures] = field(default_factory=dict)
    agreement: dict = field(default_factory=dict)
    latency: LatencyFigures | None = None
    totals: Totals = field(default_factory=Totals)
    flags: list = field(default_factory=list)
    consistency: dict = field(default_factory=dict)
    client_timing: ClientTiming = field(default_factory=ClientTiming)
    peers: dict = field(default_factory=dict)
    degenerate: dict = field(default_factory=dict)
    # the share of planned request-turns measured, per category (speedbench.analysis.run_coverage)
    coverage: dict | None = None
    # failed records a --retry-errors rerun replaced (history, excluded from every figure)
    num_superseded: int = 0
    superseded_by_kind: dict = field(default_factory=dict)

    @property
    def primary(self) -> AcceptanceFigures | None:
        """The primary acceptance source's figures (None without one)."""
        return self.acceptance.get(self.primary_acceptance_source or "")

    @property
    def timing(self) -> LatencyFigures:
        """The latency figures, empty ones when the point has none."""
        return self.latency or LatencyFigures()


@dataclass
class RunResults(Section):
    """A run's ``results.json``."""

    format_version: int
    engine: str
    points: list[PointFigures]
    model_id: str | None = None
    engine_version: str | None = None
    dataset_config: str | None = None
    manifest: str | None = None
    records: str | None = None
    selection: dict | None = None


__all__ = ["AcceptanceFigures", "ClientTiming", "LatencyFigures", "PointFigures", "ResultsFormatError", "RunResults",
           "Section", "Spread", "Totals"]
