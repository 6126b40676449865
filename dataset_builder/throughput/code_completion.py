"""Low entropy: code completion over long real code context.

No long code repositories are in the mirror; the reproducible substitute (MANIFEST.md) is the
Python source of the packages pinned in this project's ``pyproject.toml`` as installed from PyPI
(unit id ``package==version:path``), plus HumanEval-X problems with their canonical solutions in
six languages (unit id ``humaneval-x/<language>:<task id>``). A prompt is a run of consecutive
files of one package (or one HumanEval-X language), so it reads like a repository; the last file
is cut by the length fit and the model is asked to continue it. No file appears in two prompts of
a bucket.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cached_property

from speedbench.dataset_builder.throughput.base import Rendered, TaskType
from speedbench.dataset_builder.throughput.sources import (
    CodeFile, humaneval_x_files, license_of_package, site_package_files)

# Planning estimate only (exact counts come from the fit): o200k packs this corpus at ~3.8 chars per
# token on average; runs of 1.05 x N x 4.1 characters nearly always hold N tokens of code (a run
# that does not is padded, and counted in the card).
CHARS_PER_TOKEN_HIGH = 4.1
FILL = 1.05
INSTRUCTION = ("\n\n### End of files\n"
               "The last file above is cut off. Continue it from exactly where it stops, to the end of "
               "that file. Write only code, no explanations.\n")


SEGMENT = "#L"


def _segments(f: CodeFile, need_chars: int) -> list[str]:
    """Unit ids of consecutive line ranges of ``f``, each at least ``need_chars`` long (the rest dropped)."""
    segments = []
    first = 1
    chars = 0
    lines = f.text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        chars += len(line)
        if chars >= need_chars:
            segments.append(f"{f.unit_id}{SEGMENT}{first}-{number}")
            first, chars = number + 1, 0
    return segments


class CodeCompletion(TaskType):
    name = "code_completion"
    tier = "low_entropy"
    source = "pypi"
    reuses_content = False

    @cached_property
    def files(self) -> dict[str, CodeFile]:
        files = list(site_package_files()) + list(humaneval_x_files(str(self.sources)))
        return {f.unit_id: f for f in files}

    def _runs(self, n_tokens: int) -> dict[str, list[tuple[str, ...]]]:
        """Consecutive files per corpus grouped into runs of about FILL x N tokens (estimated).

        A file longer than a run is split at line boundaries into runs of its own (unit id
        ``<file>#L<first>-<last>``, 1-based and inclusive), so large modules are not wasted.
        """
        runs: dict[str, list[tuple[str, ...]]] = {"pypi": [], "humaneval-x": []}
        by_corpus: dict[str, list[CodeFile]] = {}
        for f in self.files.values():
            by_corpus.setdefault(f.corpus, []).append(f)
        need_chars = int(FILL * n_tokens * CHARS_PER_TOKEN_HIGH)
        for corpus, files in by_corpus.items():
            kind = "humaneval-x" if corpus.startswith("humaneval-x/") else "pypi"
            current: list[str] = []
            chars = 0
            for f in files:
                if len(f.text) >= 2 * need_chars:
                    runs[kind] += [(segment,) for segment in _segments(f, need_chars)]
                    continue
                current.append(f.unit_id)
                chars += len(f.text)
                if chars >= need_chars:
                    runs[kind].append(tuple(current))
                    current, chars = [], 0
        return runs

    def capacity(self, n_tokens: int) -> int | None:
        return sum(len(r) for r in self._runs(n_tokens).values())

    def select(self, n_tokens: int, count: int, rng: random.Random) -> list[tuple[str, ...]]:
        runs = self._runs(n_tokens)
        pypi, humaneval = runs["pypi"], runs["humaneval-x"]
        rng.shuffle(pypi)
        rng.shuffle(humaneval)
        # Alternate so HumanEval-X keeps a share where it has runs (it is small: only short buckets).
        chosen: list[tuple[str, ...]] = []
        while len(chosen) < count and (pypi or humaneval):
            for pool in (humaneval, pypi):
                if pool and len(chosen) < count:
                    chosen.append(pool.pop())
        return chosen

    def _file(self, unit: str) -> CodeFile:
        return self.files[unit.split(SEGMENT, 1)[0]]

    def unit_text(self, unit: str) -> str:
        path, _, lines = unit.partition(SEGMENT)
        text = self.files[path].text
        if not lines:
            return text
        first, last = (int(x) for x in lines.split("-"))
        return "".join(text.splitlines(keepends=True)[first - 1:last])

    def _display_path(self, unit: str) -> str:
        path, _, lines = unit.partition(SEGMENT)
        return f"{self.files[path].path} (lines {lines})" if lines else self.files[path].path

    def render(self, units: Sequence[str]) -> Rendered:
        first = self._file(units[0])
        if first.corpus.startswith("humaneval-x/"):
            what = f"HumanEval-X ({first.language}): programming problems with their solutions"
        else:
            name, _, version = first.corpus.partition("==")
            what = f"the Python package {name} {version}, as installed from PyPI"
        head = (f"Below are source files from {what}. Each file starts with a line "
                "'### File: <path>'.\n\n")
        body = "".join(f"### File: {self._display_path(u)}\n{self.unit_text(u)}\n\n" for u in units)
        return Rendered(head, body, INSTRUCTION)

    def row_source(self, units: Sequence[str]) -> str:
        corpus = self._file(units[0]).corpus
        return "THUDM/humaneval-x" if corpus.startswith("humaneval-x/") else f"pypi:{corpus}"

    def row_license(self, units: Sequence[str]) -> str:
        corpus = self._file(units[0]).corpus
        return "Apache-2.0" if corpus.startswith("humaneval-x/") else license_of_package(corpus.partition("==")[0])
