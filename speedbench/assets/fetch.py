"""Download the lock's files with plain HTTP GETs into the shared layout, verified.

Each file goes to ``OUT/.partial/`` first and is moved to ``OUT/<dest>`` only once its size and
sha256 are the lock's, so a ``dest`` path never holds a half-written or unverified file. A cut
download is resumed from the bytes already there (``Range: bytes=N-``), in the same run (a few
tries) or the next one; a server that ignores the range is read again from the start. A file
whose sha256 differs is refused, naming the file and both digests, and its partial file removed.
A file of an archive (``member``) is read out of the downloaded archive (a zip) and checked the
same way. Files already in place with the right size and sha256 are kept.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from speedbench.assets.lock import LockEntry

PARTIAL = ".partial"
CHUNK = 1 << 20
TRIES = 3  # per file in one run: a cut connection resumes from what arrived
MAX_ARCHIVE_BYTES = 256 << 20  # an archive's size is not in the lock: a server may not send without end
TIMEOUT_S = 60.0
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError)


class FetchError(RuntimeError):
    pass


class IntegrityError(FetchError):
    """The bytes arrived but are not the lock's (size or sha256): never retried, never kept."""


@dataclass
class FetchReport:
    fetched: list[str] = field(default_factory=list)  # dest paths written now
    present: list[str] = field(default_factory=list)  # dest paths already verified in place
    downloaded_bytes: int = 0  # bytes received over HTTP (resumed parts not counted again)
    seconds: float = 0.0


def mirrored(url: str, mirror: str | None) -> str:
    """``url`` with its scheme and host (and port) replaced by ``mirror``'s; a path in ``mirror``
    is put in front of ``url``'s path (``http://host/prefix`` + ``/a/b`` -> ``http://host/prefix/a/b``)."""
    if not mirror:
        return url
    base, original = urlsplit(mirror), urlsplit(url)
    if base.scheme not in ("http", "https") or not base.netloc:
        raise FetchError(f"SPEEDBENCH_ASSETS_MIRROR_URL={mirror!r}: expected http(s)://HOST[:PORT][/PREFIX]")
    return urlunsplit((base.scheme, base.netloc, base.path.rstrip("/") + original.path, original.query, ""))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def in_place(entry: LockEntry, out: Path) -> bool:
    path = out / entry.dest
    return path.is_file() and path.stat().st_size == entry.size and file_sha256(path) == entry.sha256


def _partial_name(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:24] + ".part"


class _Downloader:
    """One run's shared state: the output folder, the mirror, the progress bar, the byte count."""

    def __init__(self, out: Path, mirror: str | None, bar, timeout: float):
        self.out, self.mirror, self.bar, self.timeout = out, mirror, bar, timeout
        self.lock = threading.Lock()
        self.received = 0
        self.opener = urllib.request.build_opener()

    def _count(self, n: int) -> None:
        with self.lock:
            self.received += n
        if self.bar is not None:
            self.bar.update(n)

    def download(self, url: str, part: Path, limit: int) -> None:
        """``url`` into ``part``, resuming what is there; at most ``limit`` bytes in all."""
        for attempt in range(TRIES):
            try:
                self._get(url, part, limit)
                return
            except IntegrityError:
                raise
            except _NETWORK_ERRORS:
                if attempt == TRIES - 1:
                    raise

    def _get(self, url: str, part: Path, limit: int) -> None:
        have = part.stat().st_size if part.exists() else 0
        if have >= limit > 0:  # a complete (or overlong) part: verified by the caller
            return
        request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            response = self.opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as error:
            if error.code == 416 and have:  # the part is no prefix the server knows: start over
                part.unlink()
                return self._get(url, part, limit)
            raise
        with response:
            resumed = response.status == 206 and have
            with open(part, "ab" if resumed else "wb") as handle:
                written = have if resumed else 0
                expected = response.headers.get("Content-Length")
                got = 0
                while block := response.read(CHUNK):
                    written += len(block)
                    got += len(block)
                    if written > limit:
                        handle.close()
                        part.unlink()
                        raise IntegrityError(f"{url}: more than the {limit} bytes expected; refused")
                    handle.write(block)
                    self._count(len(block))
                if expected is not None and got < int(expected):
                    raise http.client.IncompleteRead(b"", int(expected) - got)


def _refuse(part: Path, entry: LockEntry, what: str) -> IntegrityError:
    part.unlink(missing_ok=True)
    return IntegrityError(f"{entry.dest}: {what} (from {entry.url}); refused, nothing written")


def _verify_file(part: Path, entry: LockEntry) -> None:
    size = part.stat().st_size
    if size != entry.size:
        raise _refuse(part, entry, f"{size} bytes, the lock says {entry.size}")
    digest = file_sha256(part)
    if digest != entry.sha256:
        raise _refuse(part, entry, f"sha256 {digest}, the lock says {entry.sha256}")


def _place(part: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, final)


def _extract(archive: Path, entry: LockEntry, staging: Path) -> Path:
    """The member of ``archive`` into a staging file, checked against the lock."""
    target = staging / (_partial_name(entry.url + "#" + entry.member) + ".member")
    try:
        with zipfile.ZipFile(archive) as zf, zf.open(entry.member) as source, open(target, "wb") as sink:
            sink.write(source.read(entry.size + 1))  # one byte more shows an overlong member
    except KeyError:
        raise IntegrityError(f"{entry.dest}: {entry.url} has no member {entry.member!r}; refused") from None
    except zipfile.BadZipFile:
        archive.unlink(missing_ok=True)
        raise IntegrityError(f"{entry.dest}: {entry.url} is not a zip archive; refused") from None
    _verify_file(target, entry)
    return target


def _fetch_group(dl: _Downloader, url: str, entries: list[LockEntry]) -> list[str]:
    """One URL: a plain file (one entry) or an archive (its member entries)."""
    staging = dl.out / PARTIAL
    staging.mkdir(parents=True, exist_ok=True)
    part = staging / _partial_name(url)
    source = mirrored(url, dl.mirror)
    if entries[0].member is None:
        dl.download(source, part, entries[0].size)
        _verify_file(part, entries[0])
        _place(part, dl.out / entries[0].dest)
    else:
        dl.download(source, part, MAX_ARCHIVE_BYTES)
        for entry in entries:
            _place(_extract(part, entry, staging), dl.out / entry.dest)
        part.unlink()
    return [e.dest for e in entries]


def _network_message(errors: dict[str, Exception], only: str, mirror: str | None) -> str:
    first = next(iter(errors.values()))
    reason = getattr(first, "reason", None) or first
    where = f"the mirror {mirror}" if mirror else "the origins"
    return (f"{len(errors)} file(s) could not be downloaded from {where} ({reason}; first: {next(iter(errors))}). "
            f"Fetch them with `speedbench assets fetch --only {only}` on a machine that reaches them "
            f"(the partial downloads are kept and resumed), or set SPEEDBENCH_ASSETS_MIRROR_URL to a mirror")


def fetch(entries: list[LockEntry], out: str | Path, *, only: str = "all", mirror: str | None = None,
          workers: int = 4, progress: bool = True, timeout: float = TIMEOUT_S) -> FetchReport:
    """Every entry into ``out`` (verified); a FetchError lists what failed after the others are done."""
    from tqdm import tqdm

    out = Path(out)
    started, report = time.perf_counter(), FetchReport()
    missing = []
    for entry in entries:
        (report.present if in_place(entry, out) else missing).append(entry)
    report.present = [e.dest for e in report.present]
    groups: dict[str, list[LockEntry]] = {}
    for entry in missing:
        groups.setdefault(entry.url, []).append(entry)
    total = sum(e.size for e in missing)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="assets", disable=not progress or not groups)
    dl = _Downloader(out, mirror, bar, timeout)
    network: dict[str, Exception] = {}
    refused: list[str] = []
    with bar, ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(_fetch_group, dl, url, group): group for url, group in groups.items()}
        for future, group in futures.items():
            try:
                report.fetched += future.result()
            except IntegrityError as error:
                refused.append(str(error))
            except _NETWORK_ERRORS as error:
                network[group[0].dest] = error
    staging = out / PARTIAL
    if staging.is_dir() and not any(staging.iterdir()):
        shutil.rmtree(staging)
    report.downloaded_bytes, report.seconds = dl.received, time.perf_counter() - started
    if refused or network:
        lines = refused + ([_network_message(network, only, mirror)] if network else [])
        raise FetchError("\n".join(lines))
    return report
