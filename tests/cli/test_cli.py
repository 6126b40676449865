"""The `speedbench` entry point: help, no command, and every subcommand module importable."""
import subprocess
import sys

import pytest

import speedbench.cli as cli
from speedbench.cli import SUBCOMMAND_MODULES, build_parser, main


def test_help_lists_the_command_and_exits_zero():
    result = subprocess.run([sys.executable, "-m", "speedbench", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "usage: speedbench" in result.stdout


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: speedbench")
    for name in SUBCOMMAND_MODULES:
        assert name.replace("_", "-") in out or name in out, name


def test_every_listed_subcommand_is_registered():
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if a.dest == "command"]
    registered = set(subparsers.choices)
    assert {name.replace("_", "-") for name in SUBCOMMAND_MODULES} <= registered | set(SUBCOMMAND_MODULES)


def test_a_missing_subcommand_module_is_an_error(monkeypatch):
    # A listed module that cannot be imported is a broken installation, not a smaller CLI.
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", [*SUBCOMMAND_MODULES, "no_such_command"])
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        build_parser()


def test_a_missing_config_module_is_an_error(monkeypatch):
    from speedbench.dataset_builder import registry

    monkeypatch.setattr(registry, "CONFIG_MODULES", [*registry.CONFIG_MODULES, "speedbench.dataset_builder.nope"])
    with pytest.raises(ModuleNotFoundError, match="nope"):
        registry.available_configs()
