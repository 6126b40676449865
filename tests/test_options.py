"""The option declarations (speedbench/options.py): one dataclass field -> flag, default, record."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from speedbench.options import (
    add_arguments,
    flag_of,
    from_args,
    json_object,
    nested,
    option,
    positive_floats,
    positive_ints,
    recorded,
    resume_names,
)


@dataclass(kw_only=True)
class Inner:
    size: int = option("--size", default=2, parse=int, help="how big")


@dataclass(kw_only=True)
class Toy:
    name: str = option("--name", help="required: no default")
    rates: list[float] | None = option("--rates", default=None, parse=positive_floats, recorded=True)
    levels: list[int] = option("--levels", default_factory=lambda: [1, 2], parse=positive_ints, recorded=True,
                               resume=True, help="levels, 50% of them")
    loud: bool = option("--loud", default=False, help="louder")
    bar: bool = option("--no-bar", default=True, help="no bar")
    inner: Inner = nested(Inner, recorded=True, resume=True)
    hidden: int = option(None, default=7)  # set in code only


def parser_for(cls) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy")
    add_arguments(parser, cls)
    return parser


def test_flags_parse_into_the_fields_and_absent_flags_keep_defaults():
    parser = parser_for(Toy)
    assert from_args(Toy, parser.parse_args(["--name", "a"])) == Toy(name="a")
    got = from_args(Toy, parser.parse_args(["--name", "a", "--rates", "0.5,2", "--levels", "3", "--loud",
                                            "--no-bar", "--size", "9"]))
    assert got == Toy(name="a", rates=[0.5, 2.0], levels=[3], loud=True, bar=False, inner=Inner(size=9))
    assert from_args(Toy, parser.parse_args(["--name", "a"]), hidden=1).hidden == 1
    assert "--hidden" not in parser.format_help()


def test_list_defaults_are_not_shared_between_parses():
    parser = parser_for(Toy)
    first = from_args(Toy, parser.parse_args(["--name", "a"]))
    first.levels.append(99)
    assert from_args(Toy, parser.parse_args(["--name", "b"])).levels == [1, 2]


def test_help_shows_defaults_and_a_percent_sign(capsys):
    text = parser_for(Toy).format_help()
    assert "levels, 50% of them (default 1,2)" in " ".join(text.split())
    assert "how big (default 2)" in " ".join(text.split())


def test_required_flag_is_required(capsys):
    with pytest.raises(SystemExit):
        parser_for(Toy).parse_args([])
    assert "--name" in capsys.readouterr().err


def test_recorded_and_resume():
    toy = Toy(name="a", levels=[4], inner=Inner(size=3))
    assert recorded(toy) == {"rates": None, "levels": [4], "inner": {"size": 3}}
    assert resume_names(Toy) == ("levels", "inner")
    assert flag_of(Toy, "size") == "--size" and flag_of(Toy, "levels") == "--levels"


def test_a_true_default_needs_a_no_flag():
    @dataclass(kw_only=True)
    class Bad:
        on: bool = option("--on", default=True)

    with pytest.raises(TypeError, match="--no-"):
        parser_for(Bad)


@pytest.mark.parametrize("parse,text,message", [
    (positive_ints, "1,x", "comma-separated integers"), (positive_ints, "0,2", "positive integers"),
    (positive_ints, "", "positive integers"), (positive_floats, "1,-2", "positive numbers"),
    (json_object, "[1]", "JSON object"), (json_object, "{", "JSON object")])
def test_parsers_refuse_bad_text(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)


def test_parsers_read_good_text():
    assert positive_ints(" 1, 2,4 ") == [1, 2, 4] and positive_floats("0.5,2") == [0.5, 2.0]
    assert json_object('{"a": [1]}') == {"a": [1]}


def test_reuse_keeps_the_declaration_and_changes_only_what_is_named():
    import argparse
    from dataclasses import dataclass

    from speedbench.options import add_arguments, from_args, option, reuse

    @dataclass(kw_only=True)
    class Shared:
        width: int = option("--width", default=3, parse=int, metavar="W", help="the width")

    @dataclass(kw_only=True)
    class Other:
        width: int = reuse(Shared, "width", default=7, help="another width")

    parser = argparse.ArgumentParser()
    add_arguments(parser, Other)
    action = next(a for a in parser._actions if a.dest == "width")
    assert (action.option_strings, action.metavar, action.type, action.default) == (["--width"], "W", int, 7)
    assert action.help == "another width (default 7)"
    assert from_args(Other, parser.parse_args(["--width", "5"])).width == 5
    assert from_args(Shared, argparse.ArgumentParser().parse_args([])).width == 3  # the declaration unchanged
    with pytest.raises(TypeError, match="declares no option 'height'"):
        reuse(Shared, "height")


def test_positional_repeated_and_renamed_options():
    import argparse
    from dataclasses import dataclass
    from pathlib import Path

    from speedbench.options import add_arguments, from_args, option

    @dataclass(kw_only=True)
    class Cmd:
        folders: list[Path] = option("folders", parse=Path, nargs="+", metavar="DIR", help="folders")
        tag: list[str] | None = option("--tag", default=None, action="append", help="repeatable")
        alias: str | None = option("--as", default=None, dest="alias", metavar="NAME", help="renamed")

    parser = argparse.ArgumentParser()
    add_arguments(parser, Cmd)
    args = parser.parse_args(["a", "b", "--tag", "x", "--tag", "y", "--as", "n"])
    assert vars(args) == {"folders": [Path("a"), Path("b")], "tag": ["x", "y"], "alias": "n"}
    assert from_args(Cmd, args) == Cmd(folders=[Path("a"), Path("b")], tag=["x", "y"], alias="n")
    assert vars(parser.parse_args(["a"])) == {"folders": [Path("a")], "tag": None, "alias": None}
    with pytest.raises(SystemExit):
        parser.parse_args([])  # the positional is required
