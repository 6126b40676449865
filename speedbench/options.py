"""Command options declared once, as typed dataclass fields; the parser and the records derive from them.

A command's options are a dataclass (``RunOptions`` for ``speedbench run``, ``ReportOptions`` for
``speedbench report``) whose fields are made with :func:`option`: the field's name, type and
default are the option's, and its metadata says the rest (flag, help, how the text is parsed, the
choices, whether the value is recorded in the run's manifest and whether it must match on resume).
From that one declaration:

- :func:`add_arguments` adds the argparse flags (``--help`` shows each default; the namespace
  names are argparse's own, from the flag: ``--request-rate`` -> ``args.request_rate``);
- :func:`from_args` builds the dataclass from the parsed namespace;
- :func:`recorded` and :func:`resume_names` give what goes into a manifest and what a resume
  compares.

A field made with :func:`nested` holds another declared dataclass (``SamplingOptions``): its
fields become flags of the same command and it is recorded as one dict. A field made with
:func:`reuse` offers an option declared elsewhere (``settings.SharedOptions``: ``--engine``,
``--sources``, ...) in another command, naming only what differs there (its default or help). A
flag without a leading ``-`` is a positional argument; ``nargs``, ``action="append"`` and ``dest``
are argparse's. Only the standard library
is imported here (the CLI builds ``--help`` without the heavy modules).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from dataclasses import MISSING, dataclass
from typing import Any, Callable

_KEY = "speedbench_option"


@dataclass(frozen=True)
class OptionSpec:
    """How one field is offered on the command line and recorded (the field's metadata)."""

    flag: str | None  # "--max-tokens"; None: not a flag (set in code only)
    help: str = ""
    parse: Callable[[str], Any] | None = None  # text -> value (argparse ``type``)
    choices: tuple | None = None
    metavar: str | None = None
    recorded: bool = False  # written to the manifest's ``options``
    resume: bool = False  # must equal the manifest's on resume
    show_default: bool = True  # append "(default ...)" to the help
    group: str | None = None  # the --help section it is listed under
    nested: bool = False  # a declared dataclass whose own fields are the flags
    nargs: str | None = None  # argparse ``nargs`` ("+": one or more)
    action: str | None = None  # "append": the flag may repeat, its values collected in a list
    dest: str | None = None  # the namespace name when it is not the flag's (``--as`` -> ``name``)


def option(flag: str | None, *, help: str = "", default: Any = MISSING, default_factory: Any = MISSING,
           parse: Callable[[str], Any] | None = None, choices=None, metavar: str | None = None,
           recorded: bool = False, resume: bool = False, show_default: bool = True,
           group: str | None = None, nargs: str | None = None, action: str | None = None,
           dest: str | None = None) -> Any:
    """A dataclass field declaring one option (no default: the flag is required). A ``flag`` without
    a leading ``-`` is a positional argument of that name."""
    spec = OptionSpec(flag, help, parse, tuple(choices) if choices else None, metavar, recorded, resume,
                      show_default, group, nargs=nargs, action=action, dest=dest)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_KEY: spec})


def nested(cls: type, *, recorded: bool = False, resume: bool = False) -> Any:
    """A field holding the declared dataclass ``cls`` (its fields are flags; recorded as one dict)."""
    return dataclasses.field(default_factory=cls, metadata={
        _KEY: OptionSpec(None, recorded=recorded, resume=resume, nested=True)})


def reuse(cls: type, name: str, **changes) -> Any:
    """A field offering the option declared as field ``name`` of ``cls`` (its one declaration: the
    flag, how it parses, its help) in another command, with ``changes`` to what differs there
    (``default``, ``help``, ``choices``, ``group``, ``show_default``, ...)."""
    field = next((f for f, _ in declared(cls) if f.name == name), None)
    if field is None:
        raise TypeError(f"{cls.__name__} declares no option {name!r}")
    default, factory = field.default, field.default_factory
    if "default" in changes:
        default, factory = changes.pop("default"), MISSING
    if "default_factory" in changes:
        default, factory = MISSING, changes.pop("default_factory")
    if changes.get("choices") is not None:
        changes["choices"] = tuple(changes["choices"])
    spec = dataclasses.replace(spec_of(field), **changes)
    return dataclasses.field(default=default, default_factory=factory, metadata={_KEY: spec})


def _nested_class(field: dataclasses.Field) -> type:
    return field.default_factory  # nested() stores the class itself as the factory


def spec_of(field: dataclasses.Field) -> OptionSpec | None:
    return field.metadata.get(_KEY)


def declared(cls) -> list[tuple[dataclasses.Field, OptionSpec]]:
    """The declared fields of ``cls`` (a class or an instance), in order."""
    return [(f, spec_of(f)) for f in dataclasses.fields(cls) if spec_of(f) is not None]


def default_of(field: dataclasses.Field) -> Any:
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return MISSING


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _help(spec: OptionSpec, default: Any) -> str:
    text = spec.help
    hidden = default is MISSING or default is None or default is False or default == {}
    if spec.show_default and not hidden:
        text = f"{text} (default {_shown(default)})" if text else f"default {_shown(default)}"
    return text.replace("%", "%%")  # argparse formats help with %


def add_arguments(parser, cls, groups: dict | None = None, only: tuple[str, ...] | None = None) -> None:
    """One argparse option per declared flag of ``cls`` (nested dataclasses included), listed under
    its ``group`` in ``--help``.

    The defaults are the fields' own; a ``--no-X`` flag of a field that defaults to True stores
    ``no_X`` (``from_args`` inverts it). ``groups``: argument groups made beforehand, by name (their
    order and descriptions); ``only``: the field names to add (default: all)."""
    groups = {} if groups is None else groups
    # a parser that prints defaults itself (ArgumentDefaultsHelpFormatter) gets the plain help
    plain = issubclass(getattr(parser, "formatter_class", object), argparse.ArgumentDefaultsHelpFormatter)
    for field, spec in declared(cls):
        if spec.nested:
            add_arguments(parser, _nested_class(field), groups, only)
            continue
        if spec.flag is None or (only is not None and field.name not in only):
            continue
        target = parser
        if spec.group:
            if spec.group not in groups:
                groups[spec.group] = parser.add_argument_group(spec.group)
            target = groups[spec.group]
        default = default_of(field)
        help_text = spec.help.replace("%", "%%") if plain else _help(spec, default)
        positional = not spec.flag.startswith("-")  # argparse names a positional by its flag
        kwargs: dict[str, Any] = {"dest": None if positional else _dest(spec), "default": default,
                                  "help": help_text, "nargs": spec.nargs, "action": spec.action}
        if isinstance(default, bool):
            if default and not _inverted(field, spec):
                raise TypeError(f"{cls.__name__}.{field.name}: a flag for a field that defaults to True "
                                f"must be --no-...")
            kwargs.update(action="store_true", default=False, help=spec.help.replace("%", "%%"))
        else:
            metavar = spec.metavar or (None if spec.choices or positional or spec.dest
                                       else spec.flag.lstrip("-").replace("-", "_").upper())
            kwargs.update(type=spec.parse, choices=spec.choices, metavar=metavar)
            if default is MISSING:
                kwargs.update(required=None if positional else True, default=None)
        target.add_argument(spec.flag, **{k: v for k, v in kwargs.items() if v is not None})


def _dest(spec: OptionSpec) -> str:
    return spec.dest or spec.flag.lstrip("-").replace("-", "_")


def _inverted(field: dataclasses.Field, spec: OptionSpec) -> bool:
    """A field that defaults to True offered as ``--no-X`` (the namespace holds ``no_X``)."""
    return field.default is True and spec.flag.startswith("--no-")


def from_args(cls, args: argparse.Namespace, **overrides):
    """``cls`` from a namespace filled by :func:`add_arguments` (plus ``overrides`` by field name);
    a name missing from the namespace keeps the field's default."""
    values: dict[str, Any] = {}
    for field, spec in declared(cls):
        if spec.nested:
            values[field.name] = from_args(_nested_class(field), args)
        elif spec.flag is not None and hasattr(args, _dest(spec)):
            value = getattr(args, _dest(spec))
            if _inverted(field, spec):
                value = not value
            values[field.name] = copy.copy(value)  # a parser's list default is shared between parses
    values.update(overrides)
    return cls(**values)


def recorded(options) -> dict[str, Any]:
    """The declared fields marked ``recorded``, by name (nested dataclasses as dicts)."""
    out = {}
    for field, spec in declared(options):
        if spec.recorded:
            value = getattr(options, field.name)
            if spec.nested:
                value = dataclasses.asdict(value)
            out[field.name] = list(value) if isinstance(value, tuple) else value  # as JSON reads it back
    return out


def resume_names(cls) -> tuple[str, ...]:
    """The recorded fields that must be equal for a resume."""
    return tuple(field.name for field, spec in declared(cls) if spec.resume)


def flag_of(cls, name: str) -> str | None:
    """The flag of field ``name`` of ``cls`` (searching nested dataclasses), for messages."""
    for field, spec in declared(cls):
        if spec.nested:
            found = flag_of(_nested_class(field), name)
            if found:
                return found
        elif field.name == name:
            return spec.flag
    return None


# -- parsers shared by several commands ---------------------------------------------------------

def _positive_list(text: str, kind: type, noun: str) -> list:
    try:
        values = [kind(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {noun}s, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive {noun}s, got {text!r}")
    return values


def positive_ints(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; each value a positive integer."""
    return _positive_list(text, int, "integer")


def positive_floats(text: str) -> list[float]:
    """``"0.5,2"`` -> ``[0.5, 2.0]``; each value a positive number."""
    return _positive_list(text, float, "number")


def names(text: str) -> list[str]:
    """``"coding, math"`` -> ``["coding", "math"]``; at least one non-empty name."""
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return values


def json_object(text: str) -> dict[str, Any]:
    """A JSON object (``--extra-body``)."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({error})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value
