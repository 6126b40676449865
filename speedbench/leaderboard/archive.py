"""Reading an uploaded bundle archive without trusting it.

Only tar.gz and zip are read, entirely in memory: nothing is extracted to disk, so member
names cannot escape anywhere, but they are still checked (absolute paths, ``..``, backslashes,
links and devices are refused) because a name that would be dangerous elsewhere is a sign of a
hostile upload. Only ``.json`` / ``.jsonl`` members are accepted; nothing is ever executed or
unpickled. Sizes are capped before and while decompressing (zip bombs stop at the cap).
JSON is parsed strictly: ``NaN``, ``Infinity`` and overflowing numbers are refused.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import tarfile
import zipfile
import zlib
from dataclasses import dataclass

from speedbench.leaderboard.schema import BundleRejected

MiB = 1024 * 1024


@dataclass(frozen=True)
class ArchiveLimits:
    """Caps on an upload; the Space reads them from the environment (``SPEEDBENCH_MAX_BUNDLE_MB`` ...)."""

    max_archive_bytes: int = 64 * MiB
    max_total_bytes: int = 512 * MiB
    max_members: int = 256

    @classmethod
    def from_env(cls) -> "ArchiveLimits":
        archive_mb = float(os.environ.get("SPEEDBENCH_MAX_BUNDLE_MB", cls.max_archive_bytes / MiB))
        total_mb = float(os.environ.get("SPEEDBENCH_MAX_UNPACKED_MB", cls.max_total_bytes / MiB))
        return cls(max_archive_bytes=int(archive_mb * MiB), max_total_bytes=int(total_mb * MiB))


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=+-]*$")
ALLOWED_SUFFIXES = (".json", ".jsonl")
MAX_DEPTH = 4


def check_member_name(name: str) -> str:
    """The normalised member name, or a rejection saying why the name is not acceptable."""
    if not name or "\x00" in name:
        raise BundleRejected("archive member with an empty or NUL-containing name")
    if "\\" in name:
        raise BundleRejected(f"archive member {name!r}: backslashes are not allowed in member names")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise BundleRejected(f"archive member {name!r}: absolute paths are not allowed (path traversal)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleRejected(f"archive member {name!r}: '..' is not allowed in member names (path traversal)")
    if not parts or len(parts) > MAX_DEPTH or not all(_SAFE_NAME.match(p) for p in parts):
        raise BundleRejected(
            f"archive member {name!r}: names may only use letters, digits and _ . = + - "
            f"in at most {MAX_DEPTH} folder levels")
    return "/".join(parts)


def _check_suffix(name: str) -> None:
    if not name.endswith(ALLOWED_SUFFIXES):
        raise BundleRejected(
            f"archive member {name!r} is not allowed: bundles hold only .json and .jsonl files "
            "(no code, pickles or binaries)")


class _Budget:
    def __init__(self, limits: ArchiveLimits):
        self.limits = limits
        self.total = 0

    def take(self, name: str, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise BundleRejected(
                f"bundle unpacks to more than {self.limits.max_total_bytes // MiB} MiB "
                f"(stopped at {name!r}); split the submission or trim the runs")


def _read_tar(data: bytes, limits: ArchiveLimits) -> dict[str, bytes]:
    budget = _Budget(limits)
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise BundleRejected(f"archive has more than {limits.max_members} members")
                name = check_member_name(member.name)
                if member.isdir():
                    continue
                if not member.isreg():
                    raise BundleRejected(
                        f"archive member {member.name!r} is a link or special file; only regular files are accepted")
                _check_suffix(name)
                budget.take(name, member.size)
                handle = tar.extractfile(member)
                content = handle.read(member.size + 1) if handle else b""
                if len(content) != member.size:
                    raise BundleRejected(f"archive is truncated: member {name!r} is shorter than its header says")
                if name in files:
                    raise BundleRejected(f"archive member {name!r} appears twice")
                files[name] = content
    except BundleRejected:
        raise
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
        raise BundleRejected(f"archive is truncated or corrupt (tar.gz): {exc}") from None
    return files


def _read_zip(data: bytes, limits: ArchiveLimits) -> dict[str, bytes]:
    budget = _Budget(limits)
    files: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > limits.max_members:
                raise BundleRejected(f"archive has more than {limits.max_members} members")
            for info in infos:
                name = check_member_name(info.filename)
                if info.is_dir():
                    continue
                # Unix mode bits in external_attr: 0o120000 is a symlink.
                if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):
                    raise BundleRejected(
                        f"archive member {info.filename!r} is a link or special file; only regular files are accepted")
                _check_suffix(name)
                budget.take(name, info.file_size)
                with archive.open(info) as handle:
                    # Read one byte past the declared size: a lying header cannot inflate past the cap.
                    content = handle.read(info.file_size + 1)
                if len(content) != info.file_size:
                    raise BundleRejected(f"archive member {name!r} does not match its declared size")
                if name in files:
                    raise BundleRejected(f"archive member {name!r} appears twice")
                files[name] = content
    except BundleRejected:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        raise BundleRejected(f"archive is truncated or corrupt (zip): {exc}") from None
    return files


def read_archive(data: bytes, limits: ArchiveLimits | None = None) -> dict[str, bytes]:
    """Every member of a tar.gz or zip bundle as ``{name: bytes}``; anything unexpected is a rejection."""
    limits = limits or ArchiveLimits()
    if len(data) > limits.max_archive_bytes:
        raise BundleRejected(
            f"upload is {len(data) / MiB:.1f} MiB; the limit is {limits.max_archive_bytes / MiB:.0f} MiB")
    if not data:
        raise BundleRejected("upload is empty")
    if data[:2] == b"\x1f\x8b":
        files = _read_tar(data, limits)
    elif data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        files = _read_zip(data, limits)
    else:
        raise BundleRejected("upload is neither a tar.gz nor a zip archive")
    if not files:
        raise BundleRejected("archive holds no files")
    return files


def content_hash(files: dict[str, bytes], exclude: tuple[str, ...] = ()) -> str:
    """sha256 over sorted (name, sha256(content)) pairs: the same runs give the same hash however they are packed."""
    digest = hashlib.sha256()
    for name in sorted(files):
        if name in exclude:
            continue
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {text}")
    return value


def loads_strict(text: str | bytes, where: str):
    """``json.loads`` that refuses NaN, Infinity and numbers that overflow to infinity."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except UnicodeDecodeError as exc:
        raise BundleRejected(f"{where}: not UTF-8 text ({exc.reason})") from None
    except ValueError as exc:
        raise BundleRejected(f"{where}: invalid JSON ({exc})") from None


def iter_jsonl(data: bytes, where: str):
    """Each non-empty line of a JSONL member, parsed strictly; errors name the line."""
    for number, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            yield number, loads_strict(line, f"{where} line {number}")
