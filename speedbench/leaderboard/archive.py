"""Reading an uploaded bundle archive without trusting it.

Only tar.gz and zip are read, in memory: nothing is extracted to disk, so member names cannot
escape anywhere, but they are still checked (absolute paths, ``..``, backslashes, links and
devices are refused) because a name that would be dangerous elsewhere is a sign of a hostile
upload. Nothing is ever executed or unpickled. Sizes are capped before and while
decompressing (bombs stop at the cap). A tar.gz is inflated once into one buffer whose gzip
trailer (CRC-32 and length) must verify, and members are views into that buffer (no copies);
zip members are CRC-checked by :mod:`zipfile`.

Members are parsed as JSON by :mod:`.strict_json`.
"""
from __future__ import annotations

import hashlib
import io
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from speedbench import settings
from speedbench.leaderboard.schema import BundleRejected, shown

MiB = 1024 * 1024


@dataclass(frozen=True)
class ArchiveLimits:
    """Caps on an upload; the Space reads them from the environment (``SPEEDBENCH_MAX_BUNDLE_MB`` ...)."""

    max_archive_bytes: int = 64 * MiB
    # 384, not 512: validating costs up to about 4x the unpacked size (bench/leaderboard_load.py),
    # and the Space's app must stay under 2 GB with the largest upload
    max_total_bytes: int = 384 * MiB
    max_members: int = 256
    max_line_bytes: int = 16 * MiB

    @classmethod
    def from_env(cls) -> "ArchiveLimits":
        archive_mb = settings.leaderboard_limit("SPEEDBENCH_MAX_BUNDLE_MB", cls.max_archive_bytes / MiB)
        total_mb = settings.leaderboard_limit("SPEEDBENCH_MAX_UNPACKED_MB", cls.max_total_bytes / MiB)
        return cls(max_archive_bytes=int(archive_mb * MiB), max_total_bytes=int(total_mb * MiB))


class Member:
    """The bytes of one archive member: a slice of a larger buffer, read without copying."""

    __slots__ = ("_buf", "_start", "_end")

    def __init__(self, buf: bytes | bytearray, start: int = 0, end: int | None = None):
        self._buf, self._start = buf, start
        self._end = len(buf) if end is None else end

    def __len__(self) -> int:
        return self._end - self._start

    def view(self) -> memoryview:
        return memoryview(self._buf)[self._start:self._end]

    def __bytes__(self) -> bytes:
        return bytes(self.view())

    def __eq__(self, other) -> bool:
        if isinstance(other, Member):
            other = other.view()
        return self.view() == other

    def __repr__(self) -> str:
        return f"Member({len(self)} bytes)"

    def lines(self, max_line_bytes: int, where: str) -> Iterator[tuple[int, bytes]]:
        """(line number, line bytes) one at a time; a line over the cap is a rejection."""
        buf, pos, end, number = self._buf, self._start, self._end, 0
        while pos < end:
            number += 1
            cut = buf.find(b"\n", pos, end)
            stop = end if cut < 0 else cut
            if stop - pos > max_line_bytes:
                raise BundleRejected(f"line {number} is longer than {max_line_bytes // MiB} MiB",
                                     rule="json.line_too_long", where=where)
            yield number, bytes(memoryview(buf)[pos:stop]) if isinstance(buf, bytearray) else buf[pos:stop]
            pos = stop + 1


def as_member(data) -> Member:
    return data if isinstance(data, Member) else Member(bytes(data))


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=+-]*$")
MAX_DEPTH = 4


def check_member_name(name: str) -> str:
    """The normalised member name, or a rejection saying why the name is not acceptable."""
    if not name or "\x00" in name:
        raise BundleRejected("archive member with an empty or NUL-containing name", rule="archive.name")
    if "\\" in name:
        raise BundleRejected(f"archive member {shown(name)}: backslashes are not allowed in member names",
                             rule="archive.name")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise BundleRejected(f"archive member {shown(name)}: absolute paths are not allowed (path traversal)",
                             rule="archive.path_traversal")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleRejected(f"archive member {shown(name)}: '..' is not allowed in member names (path traversal)",
                             rule="archive.path_traversal")
    if not parts or len(parts) > MAX_DEPTH or not all(_SAFE_NAME.match(p) for p in parts):
        raise BundleRejected(
            f"archive member {shown(name)}: names may only use letters, digits and _ . = + - "
            f"in at most {MAX_DEPTH} folder levels", rule="archive.name")
    return "/".join(parts)


ALLOWED_SUFFIXES = (".json", ".jsonl")


def _check_suffix(name: str) -> None:
    if not name.endswith(ALLOWED_SUFFIXES):
        raise BundleRejected(
            f"archive member {shown(name)} is not allowed: bundles hold only .json and .jsonl files "
            "(no code, pickles or binaries)", rule="archive.member_not_allowed")


class _Budget:
    def __init__(self, limits: ArchiveLimits):
        self.limits = limits
        self.total = 0

    def take(self, name: str, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise BundleRejected(
                f"bundle unpacks to more than {self.limits.max_total_bytes // MiB} MiB "
                f"(stopped at {shown(name)}); split the submission or trim the runs", rule="archive.unpacked_size")


def _gunzip(data: bytes, cap: int) -> bytearray:
    """The whole gzip stream inflated, its CRC-32 and length trailer verified, at most ``cap`` bytes."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    view, pos, step = memoryview(data), 0, MiB
    try:
        while not inflater.eof:
            chunk = inflater.unconsumed_tail or view[pos:pos + step]
            if not inflater.unconsumed_tail:
                pos += len(chunk)
            if not chunk:
                raise BundleRejected("archive is truncated or corrupt (tar.gz): the gzip stream ends before its trailer",
                                     rule="archive.truncated")
            # at most one step of output per call: a large bytes object next to the buffer would double the peak
            out += inflater.decompress(chunk, min(step, cap + 1 - len(out)))
            if len(out) > cap:
                raise BundleRejected(f"bundle unpacks to more than {cap // MiB} MiB", rule="archive.unpacked_size")
    except zlib.error as exc:
        problem = ("gzip CRC-32 does not match" if "data check" in str(exc) else
                   "gzip length trailer does not match" if "length check" in str(exc) else str(exc))
        raise BundleRejected(f"archive is truncated or corrupt (tar.gz): {problem}", rule="archive.corrupt") from None
    if inflater.unused_data or pos < len(data):
        raise BundleRejected("archive is truncated or corrupt (tar.gz): data after the end of the gzip stream",
                             rule="archive.corrupt")
    return out


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a buffer, so :mod:`tarfile` reads it without a copy."""

    def __init__(self, buf: bytearray):
        self._view, self._pos = memoryview(buf), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._pos + size)
        data = bytes(self._view[self._pos:end])
        self._pos = max(self._pos, end)
        return data


def _read_tar(data: bytes, limits: ArchiveLimits) -> dict[str, Member]:
    # headers and padding: 512-byte blocks, PAX headers, the end-of-archive record
    overhead = 4096 * (limits.max_members + 2) + 20 * 512
    buf = _gunzip(data, limits.max_total_bytes + overhead)
    budget = _Budget(limits)
    files: dict[str, Member] = {}
    try:
        with tarfile.TarFile(fileobj=_ViewFile(buf), mode="r") as tar:
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise BundleRejected(f"archive has more than {limits.max_members} members",
                                         rule="archive.members")
                name = check_member_name(member.name)
                if member.isdir():
                    continue
                if not member.isreg() or member.issparse():
                    raise BundleRejected(f"archive member {shown(member.name)} is a link or special file; "
                                         "only regular files are accepted", rule="archive.member_type")
                _check_suffix(name)
                budget.take(name, member.size)
                start = member.offset_data
                if start + member.size > len(buf):
                    raise BundleRejected(f"archive is truncated: member {shown(name)} is shorter than its header says",
                                         rule="archive.truncated")
                if name in files:
                    raise BundleRejected(f"archive member {shown(name)} appears twice", rule="archive.duplicate_member")
                files[name] = Member(buf, start, start + member.size)
    except BundleRejected:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError, UnicodeError) as exc:
        raise BundleRejected(f"archive is truncated or corrupt (tar.gz): {exc}", rule="archive.corrupt") from None
    return files


_ZIP_END = b"PK\x05\x06"
_ZIP_END_SIZE = 22
# a central directory entry: 46 bytes and its name, extra field and comment (a bundle's member
# names are short; this leaves room for any zip tool's extras)
MAX_ZIP_ENTRY_BYTES = 46 + 1024


def check_zip_directory(handle, limits: ArchiveLimits) -> None:
    """Refuse a zip whose end record lists more members, or a larger central directory, than
    ``limits`` allow, before :mod:`zipfile` parses the directory into one object per member (a
    64 MiB upload can list about 640,000). The end record is found as zipfile finds it."""
    size = handle.seek(0, 2)
    tail_size = min(size, _ZIP_END_SIZE + 65535)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = len(tail) - _ZIP_END_SIZE if tail[-_ZIP_END_SIZE:-_ZIP_END_SIZE + 4] == _ZIP_END \
        and tail[-2:] == b"\0\0" else tail.rfind(_ZIP_END)
    if at < 0 or len(tail) - at < _ZIP_END_SIZE:
        raise BundleRejected("archive is truncated or corrupt (zip): no end of central directory record",
                             rule="archive.corrupt")
    members, directory = struct.unpack("<HI", tail[at + 10:at + 16])
    if members > limits.max_members or directory > limits.max_members * MAX_ZIP_ENTRY_BYTES:
        raise BundleRejected(f"archive has more than {limits.max_members} members (its zip directory lists "
                             f"{members}{'+' if members == 0xFFFF else ''} in {directory} bytes)",
                             rule="archive.members")


def _read_zip(data: bytes, limits: ArchiveLimits) -> dict[str, Member]:
    budget = _Budget(limits)
    files: dict[str, Member] = {}
    check_zip_directory(io.BytesIO(data), limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > limits.max_members:
                raise BundleRejected(f"archive has more than {limits.max_members} members", rule="archive.members")
            for info in infos:
                name = check_member_name(info.filename)
                if info.is_dir():
                    continue
                # Unix mode bits in external_attr: 0o120000 is a symlink.
                if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):
                    raise BundleRejected(f"archive member {shown(info.filename)} is a link or special file; "
                                         "only regular files are accepted", rule="archive.member_type")
                _check_suffix(name)
                budget.take(name, info.file_size)
                with archive.open(info) as handle:
                    # One byte past the declared size: a lying header cannot inflate past the cap;
                    # reading to the end makes zipfile check the member's CRC-32.
                    content = handle.read(info.file_size + 1)
                if len(content) != info.file_size:
                    raise BundleRejected(f"archive member {shown(name)} does not match its declared size",
                                         rule="archive.corrupt")
                if name in files:
                    raise BundleRejected(f"archive member {shown(name)} appears twice", rule="archive.duplicate_member")
                files[name] = Member(content)
    except BundleRejected:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError) as exc:
        raise BundleRejected(f"archive is truncated or corrupt (zip): {exc}", rule="archive.corrupt") from None
    return files


def read_archive(data: bytes, limits: ArchiveLimits | None = None) -> dict[str, Member]:
    """Every member of a tar.gz or zip bundle as ``{name: Member}``; anything unexpected is a rejection."""
    limits = limits or ArchiveLimits()
    if len(data) > limits.max_archive_bytes:
        raise BundleRejected(
            f"upload is {len(data) / MiB:.1f} MiB; the limit is {limits.max_archive_bytes / MiB:.0f} MiB",
            rule="archive.size")
    if not data:
        raise BundleRejected("upload is empty", rule="archive.format")
    if data[:2] == b"\x1f\x8b":
        files = _read_tar(data, limits)
    elif data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        files = _read_zip(data, limits)
    else:
        raise BundleRejected("upload is neither a tar.gz nor a zip archive", rule="archive.format")
    if not files:
        raise BundleRejected("archive holds no files", rule="archive.format")
    return files


def content_hash(files: dict, exclude: tuple[str, ...] = ()) -> str:
    """sha256 over sorted (name, sha256(content)) pairs (the raw bytes; see :mod:`.canonical` for duplicates)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        if name in exclude:
            continue
        content = files[name].view() if isinstance(files[name], Member) else files[name]
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()
