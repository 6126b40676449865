"""Which assets `make demo` / `make test` use: environment, the shared folder, the cache, or a fetch."""
from __future__ import annotations

import socket

import pytest

from speedbench.assets.locate import AssetsNotFound, locate
from speedbench.cli import main as cli_main


@pytest.fixture()
def clean_env(monkeypatch, tmp_path):
    for name in ("SPEEDBENCH_SOURCES", "SPEEDBENCH_MODELS", "SPEEDBENCH_ASSETS_MIRROR_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPEEDBENCH_CACHE", str(tmp_path / "cache"))
    return monkeypatch


def test_the_shared_folder_first(clean_env, sources_dir):
    clean_env.setenv("SPEEDBENCH_SHARED", str(sources_dir.parent))
    said = []
    found = locate("all", log=said.append)
    assert (found.origin, found.sources, found.models) == (
        "shared", sources_dir.parent / "sources", sources_dir.parent / "models" / "stories260K")
    assert said == [f"assets: the shared folder {sources_dir.parent}"]


def test_both_variables_set_are_used_as_they_are(clean_env, tmp_path):
    clean_env.setenv("SPEEDBENCH_SOURCES", str(tmp_path / "s"))
    clean_env.setenv("SPEEDBENCH_MODELS", str(tmp_path / "m"))
    found = locate("demo", log=lambda _: None)
    assert (found.origin, found.sources, found.models) == ("environment", tmp_path / "s", tmp_path / "m")


def test_offline_without_shared_or_cache_is_one_error_naming_the_command(clean_env, tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on: an unreachable mirror
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clean_env.setenv("SPEEDBENCH_SHARED", str(tmp_path / "no-shared"))
    clean_env.setenv("SPEEDBENCH_ASSETS_MIRROR_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(AssetsNotFound, match=r"`speedbench assets fetch --only demo`"):
        locate("demo", progress=False, log=lambda _: None)
    assert cli_main(["assets", "env", "--only", "demo", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 2  # the "fetching" line and one error
    assert "speedbench assets env: " in captured.err and "could not be downloaded" in captured.err
    assert not (tmp_path / "cache" / "assets" / "sources").exists()


def test_env_prints_shell_exports(clean_env, sources_dir, capsys):
    clean_env.setenv("SPEEDBENCH_SHARED", str(sources_dir.parent))
    assert cli_main(["assets", "env", "--only", "all"]) == 0
    captured = capsys.readouterr()
    models = sources_dir.parent / "models" / "stories260K"
    assert captured.out == f"export SPEEDBENCH_SOURCES={sources_dir.parent / 'sources'} SPEEDBENCH_MODELS={models}\n"
    assert "assets: the shared folder" in captured.err
