"""Source adapters: one module per public source, each turning its files into candidate rows.

Every adapter module defines ``SOURCE`` (the dataset id written in each row), ``LICENSE``,
``FEEDS`` (the qualitative categories it contributes to), optionally ``HUB`` (where the
reference reads the same files on the Hugging Face Hub), and
``candidates(files: SourceFiles) -> list[DatasetRow]``. ``SourceFiles`` resolves a path in the
offline mirror (``--sources``) or, with ``--online``, downloads the same file from the Hub at a
pinned revision; it records every file read so the manifest can hash it.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from speedbench.dataset_builder.sources._read import SourceError

# Adapter modules whose rows make the candidate pools, in pooling order (the order does not affect
# selection). Not pooled: ``specbench`` (the comparison set of the diversity report, never a
# candidate), and the substitutes the mirror's real sources replaced (``humaneval``, ``humaneval_x``
# and ``mbpp`` by HumanEvalPack, LiveCodeBench and Code Contests; ``mmlu`` by MMLU-Pro, which
# already holds MMLU's questions). ``OTHER_ADAPTERS`` keeps them importable by name.
ADAPTER_MODULES = (
    "mtbench101", "humanevalpack", "livecodebench", "code_contests", "mmlu_pro", "hle", "realcritic",
    "bbh", "gsm8k", "math_rise", "benchfortir_math", "benchfortir_qa", "mmath", "flores",
    "tatoeba", "xquad", "rolebench", "coser", "writingbench", "eqbench", "qags", "qmsum", "bamboo",
)
COMPARISON_ONLY = ("specbench",)
OTHER_ADAPTERS = ("humaneval", "humaneval_x", "mbpp", "mmlu")


@dataclass(frozen=True)
class HubFile:
    """The same file on the Hub: ``repo_id`` (a dataset repo) and the path inside it per mirror path."""
    repo_id: str
    files: dict[str, str]              # mirror-relative path -> path in the Hub repo
    revision: str | None = None        # pinned commit; None = resolve main once and record it


@dataclass
class SourceFiles:
    root: Path
    online: bool = False
    hub_revisions: dict[str, str] = field(default_factory=dict)   # repo_id -> commit (overrides HubFile.revision)
    used: list[Path] = field(default_factory=list)
    resolved_revisions: dict[str, str] = field(default_factory=dict)

    def path(self, relative: str, hub: HubFile | None = None) -> Path:
        """The local file for ``relative`` (mirror path); with ``online`` and a Hub location, download it."""
        if self.online and hub is not None and relative in hub.files:
            from speedbench.dataset_builder.sources.hub import download_pinned
            local, revision = download_pinned(hub, relative, self.hub_revisions.get(hub.repo_id))
            self.resolved_revisions[hub.repo_id] = revision
        else:
            local = Path(self.root) / relative
            if not local.is_file():
                raise SourceError(f"{local}: source file not found (is --sources / SPEEDBENCH_SOURCES "
                                  f"the offline mirror?)")
        if local not in self.used:
            self.used.append(local)
        return local

    def glob(self, pattern: str) -> list[Path]:
        """Mirror files matching ``pattern`` (sorted); none found is an error naming the pattern."""
        matches = sorted(Path(self.root).glob(pattern))
        if not matches:
            raise SourceError(f"{Path(self.root) / pattern}: no source files match")
        for path in matches:
            if path not in self.used:
                self.used.append(path)
        return matches


def adapter(name: str):
    return importlib.import_module(f"speedbench.dataset_builder.sources.{name}")


def all_adapters():
    return [adapter(name) for name in ADAPTER_MODULES]


__all__ = ["ADAPTER_MODULES", "COMPARISON_ONLY", "OTHER_ADAPTERS", "HubFile", "SourceError", "SourceFiles", "adapter", "all_adapters"]
