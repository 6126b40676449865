import subprocess
import sys

from speedbench.cli import build_parser


def test_help_lists_the_command_and_exits_zero():
    result = subprocess.run([sys.executable, "-m", "speedbench", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "usage: speedbench" in result.stdout


def test_no_command_prints_help_and_fails():
    parser = build_parser()
    args = parser.parse_args([])
    assert args.command is None
