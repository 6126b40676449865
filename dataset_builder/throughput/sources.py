"""Readers for the source files the Throughput split is built from (the offline mirror + site-packages).

Every reader returns plain Python records in the file's own order, with a stable id per record,
and is cached per path so that the five buckets share one read. Bad input raises an error naming
the file and line.
"""
from __future__ import annotations

import gzip
import importlib.metadata
import json
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG EBOOK.*$", re.MULTILINE)
GUTENBERG_END = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG EBOOK.*$", re.MULTILINE)


class SourceError(ValueError):
    """A source file that is missing or malformed; the message names it."""


def _require(path: Path) -> Path:
    if not path.exists():
        raise SourceError(f"{path}: source file not found (is --sources the offline mirror?)")
    return path


def read_jsonl(path: Path) -> list[dict]:
    """One JSON object per line (gzip allowed); blank lines skipped, a bad line is named."""
    path = _require(Path(path))
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise SourceError(f"{path}: line {number} is not valid JSON ({error})") from error
    return records


@lru_cache(maxsize=None)
def jsonl_records(path: str, skip_malformed: bool = False) -> tuple[dict, ...]:
    """Cached :func:`read_jsonl`; ``skip_malformed`` drops unparsable lines (BAMBOO paperqa has one)."""
    if not skip_malformed:
        return tuple(read_jsonl(Path(path)))
    records = []
    with open(_require(Path(path)), encoding="utf-8") as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return tuple(records)


@lru_cache(maxsize=None)
def json_document(path: str) -> object:
    path_ = _require(Path(path))
    try:
        return json.loads(path_.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise SourceError(f"{path_}: not valid JSON ({error})") from error


def gutenberg_body(text: str) -> str:
    """The book text between the Project Gutenberg START and END lines (the licence is not the book)."""
    start = GUTENBERG_START.search(text)
    end = GUTENBERG_END.search(text)
    body = text[start.end() if start else 0:end.start() if end else len(text)]
    return body.replace("\r\n", "\n").strip("\ufeff\n ")


@lru_cache(maxsize=None)
def gutenberg_books(root: str) -> tuple[tuple[str, str], ...]:
    """(relative path, book text) for every novel under ``gutenberg_dighums/``, sorted by path."""
    folder = _require(Path(root) / "gutenberg_dighums")
    books = []
    for path in sorted(folder.glob("*/*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        books.append((str(path.relative_to(root)), gutenberg_body(text)))
    if not books:
        raise SourceError(f"{folder}: no .txt books found")
    return tuple(books)


@dataclass(frozen=True)
class CodeFile:
    corpus: str        # "pandas==3.1.1" or "humaneval-x/cpp"
    path: str          # path inside the package, or the HumanEval-X task id
    language: str
    text: str

    @property
    def unit_id(self) -> str:
        return f"{self.corpus}:{self.path}"


def pinned_packages(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[tuple[str, str]]:
    """(name, version) of every dependency pinned with ``==`` in this project's pyproject.toml (extras too)."""
    data = tomllib.loads(_require(pyproject).read_text(encoding="utf-8"))
    requirements = list(data["project"]["dependencies"])
    for extra in data["project"].get("optional-dependencies", {}).values():
        requirements += extra
    pins: dict[str, str] = {}
    for requirement in requirements:
        name, _, version = requirement.partition("==")
        if version and "[" not in name:
            pins.setdefault(name.strip(), version.strip())
    return list(pins.items())


# Pinned dependencies whose installed Python sources make up the code-completion corpus (about
# 80 MB of code; the 32k bucket needs ~460 runs of ~150k characters). Binary-only or tiny
# packages add little and are left out.
CODE_PACKAGES = ("numpy", "pandas", "pyarrow", "datasets", "huggingface_hub", "tqdm", "tiktoken",
                 "scipy", "matplotlib", "gradio", "gradio_client", "aiohttp", "jinja2", "evaluate",
                 "pytest", "playwright")
MIN_CODE_FILE_CHARS = 2000


@lru_cache(maxsize=None)
def site_package_files(packages: tuple[str, ...] = CODE_PACKAGES) -> tuple[CodeFile, ...]:
    """Python source files of the pinned packages as installed, ``package==version:path``, sorted.

    The unit id names the *installed* version, so it always describes the content read; an
    installation that differs from the pin is listed by :func:`pin_mismatches` (build stats and card).
    """
    pins = dict(pinned_packages())
    files = []
    for name in packages:
        if name not in pins:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as error:
            raise SourceError(f"package {name}=={pins[name]} (pinned in pyproject.toml) is not installed") from error
        version = distribution.version
        for entry in sorted(distribution.files or [], key=str):
            if entry.suffix != ".py":
                continue
            path = Path(distribution.locate_file(entry))
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) >= MIN_CODE_FILE_CHARS:
                files.append(CodeFile(f"{name}=={version}", str(entry), "python", text))
    return tuple(files)


def pin_mismatches(packages: tuple[str, ...] = CODE_PACKAGES) -> dict[str, str]:
    """``{package: "installed X, pinned Y"}`` for code-corpus packages whose installation differs from the pin."""
    mismatches = {}
    for name, pinned in pinned_packages():
        if name in packages:
            try:
                installed = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
            if installed != pinned:
                mismatches[name] = f"installed {installed}, pinned {pinned}"
    return mismatches


HUMANEVAL_X_LANGUAGES = ("cpp", "go", "java", "js", "python", "rust")


@lru_cache(maxsize=None)
def humaneval_x_files(root: str) -> tuple[CodeFile, ...]:
    """Each HumanEval-X problem with its canonical solution, as one small source file, per language."""
    files = []
    for language in HUMANEVAL_X_LANGUAGES:
        for record in read_jsonl(Path(root) / "humaneval_x" / f"humaneval_{language}.jsonl.gz"):
            # The prompt already holds the declaration for most languages; Go/Rust keep it apart.
            text = record["prompt"] + record["canonical_solution"]
            if language in ("go", "rust") and record.get("declaration") and record["declaration"] not in text:
                text = record["declaration"] + record["canonical_solution"]
            files.append(CodeFile(f"humaneval-x/{language}", record["task_id"], language, text))
    return tuple(files)


def license_of_package(name: str) -> str:
    try:
        metadata = importlib.metadata.metadata(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    value = metadata.get("License-Expression") or metadata.get("License") or ""
    return value.splitlines()[0][:60] if value else "see package metadata"
