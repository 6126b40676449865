"""``assets.lock.json``: every asset file at its origin, pinned by sha256 and size.

Format: ``{"format": 1, "notes": [...], "files": [{"url", "sha256", "size", "dest"[, "member"],
"demo"}]}``. ``dest`` is the path under the shared folder's layout (``sources/...``,
``models/stories260K/...``); ``member`` is the path inside an archive (a zip, such as a wheel) at
``url`` whose member is the file; ``sha256`` and ``size`` are always the file's own (the
member's); ``demo`` marks the files ``speedbench demo`` reads (``--only demo``).
A lock that breaks any of this is refused naming the entry and the field.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

LOCK_FILE = Path(__file__).resolve().parents[2] / "assets.lock.json"
SUBSETS = ("demo", "all")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TOP_FOLDERS = ("sources", "models")


class LockError(ValueError):
    pass


@dataclass(frozen=True)
class LockEntry:
    url: str
    sha256: str
    size: int
    dest: str  # relative POSIX path in the shared layout
    member: str | None = None
    demo: bool = False


def _entry(where: str, raw) -> LockEntry:
    if not isinstance(raw, dict):
        raise LockError(f"{where}: an entry must be an object")
    unknown = set(raw) - {"url", "sha256", "size", "dest", "member", "demo"}
    if unknown:
        raise LockError(f"{where}: unknown field(s) {sorted(unknown)}")
    for name, kind in (("url", str), ("sha256", str), ("size", int), ("dest", str)):
        if not isinstance(raw.get(name), kind) or isinstance(raw.get(name), bool):
            raise LockError(f"{where}: field {name!r} must be a {kind.__name__}")
    url = urlsplit(raw["url"])
    if url.scheme not in ("http", "https") or not url.netloc:
        raise LockError(f"{where}: field 'url' is not an http(s) URL: {raw['url']!r}")
    if not _SHA256.fullmatch(raw["sha256"]):
        raise LockError(f"{where}: field 'sha256' is not 64 lower-case hex digits")
    if raw["size"] < 0:
        raise LockError(f"{where}: field 'size' is negative")
    dest = PurePosixPath(raw["dest"])
    # dest becomes a path under the output folder: nothing may climb out of it
    if dest.is_absolute() or ".." in dest.parts or not dest.parts or dest.parts[0] not in _TOP_FOLDERS \
            or str(dest) != raw["dest"] or "\\" in raw["dest"]:
        raise LockError(f"{where}: field 'dest' must be a relative path under {'/ or '.join(_TOP_FOLDERS)}/ "
                        f"without '..': {raw['dest']!r}")
    member = raw.get("member")
    if member is not None and (not isinstance(member, str) or not member):
        raise LockError(f"{where}: field 'member' must be a non-empty string")
    if not isinstance(raw.get("demo", False), bool):
        raise LockError(f"{where}: field 'demo' must be true or false")
    return LockEntry(raw["url"], raw["sha256"], raw["size"], raw["dest"], member, raw.get("demo", False))


def parse_lock(data, source: str = "assets.lock.json") -> list[LockEntry]:
    """The entries of a decoded lock; duplicate ``dest`` values are refused."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise LockError(f"{source}: expected an object with a 'files' list")
    entries = [_entry(f"{source}: files[{i}]", raw) for i, raw in enumerate(data["files"])]
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if entry.dest in seen:
            raise LockError(f"{source}: files[{i}]: dest {entry.dest!r} appears twice")
        seen.add(entry.dest)
    return entries


def load_lock(path: str | Path = LOCK_FILE) -> list[LockEntry]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LockError(f"{path}: lock file not found") from None
    except json.JSONDecodeError as error:
        raise LockError(f"{path}: not JSON ({error})") from None
    return parse_lock(data, str(path))


def select(entries: list[LockEntry], only: str = "all") -> list[LockEntry]:
    """``all``: every entry; ``demo``: the entries marked ``demo``."""
    if only not in SUBSETS:
        raise LockError(f"--only {only!r}: expected one of {', '.join(SUBSETS)}")
    return [e for e in entries if only == "all" or e.demo]
