"""Which builder makes which dataset config.

Each config module registers a function ``BuildContext -> BuiltConfig`` under its config
name(s) with ``@register_config``; ``speedbench build --configs a,b`` looks them up here and
the writer turns the results into the dataset folder.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speedbench.schema import DatasetRow
from speedbench.settings import BuildOptions


@dataclass
class BuildContext:
    sources: Path                      # the source mirror (--sources / SPEEDBENCH_SOURCES)
    out_dir: Path                      # the dataset folder being written
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)  # as given; recorded in manifest.json
    progress: bool = True              # show progress bars
    # The typed view of ``options`` (defaults filled in); an unknown option is refused here.
    build_options: BuildOptions = field(init=False, repr=False)

    def __post_init__(self):
        self.build_options = BuildOptions.from_mapping(self.options)


@dataclass
class BuiltConfig:
    name: str
    rows: list[DatasetRow]
    card_section: str = ""             # Markdown for dataset_card.md about this config
    stats: dict[str, Any] = field(default_factory=dict)       # goes into manifest.json
    source_files: list[Path] = field(default_factory=list)    # hashed into manifest.json


ConfigBuilder = Callable[[BuildContext], BuiltConfig]
CONFIG_BUILDERS: dict[str, ConfigBuilder] = {}

# Modules that register configs when imported; one that fails to import is an error.
CONFIG_MODULES = [
    "speedbench.dataset_builder.qualitative",
    "speedbench.dataset_builder.throughput",
    "speedbench.dataset_builder.lite",
]


def register_config(*names: str) -> Callable[[ConfigBuilder], ConfigBuilder]:
    def decorate(builder: ConfigBuilder) -> ConfigBuilder:
        for name in names:
            CONFIG_BUILDERS[name] = builder
        return builder
    return decorate


def available_configs() -> dict[str, ConfigBuilder]:
    for module in CONFIG_MODULES:
        importlib.import_module(module)
    return dict(CONFIG_BUILDERS)
