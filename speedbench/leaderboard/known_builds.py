"""The SPEED-Bench dataset builds a submission may declare, and the check that its records match.

A run's manifest names its dataset config and the dataset fingerprint the client recorded
(``dataset_config_sha256``: :func:`speedbench.fingerprint.dataset_fingerprint`, a hash of
the config's rows, independent of the folder's other configs and of the parquet writer). The leaderboard accepts only
configs of builds it knows; each build is described by a small JSON file (``describe_dataset``
writes one from a built dataset folder)::

    {"name": "...",
     "configs": {"qualitative": {"dataset_config_sha256": "<64 hex>",
                                 "questions": {"<question_id>": "<category>", ...}}, ...}}

Descriptors are read from this package's ``build_descriptors/`` folder and from the folders or
files listed in ``SPEEDBENCH_KNOWN_BUILDS`` (``os.pathsep``-separated).

Usage: ``python -m speedbench.leaderboard.known_builds DATASET_DIR OUT.json [--name NAME]``.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from speedbench import settings
from speedbench.fingerprint import dataset_fingerprint
from speedbench.leaderboard.schema import BundleRejected, shown

__all__ = ["KnownBuild", "KnownBuilds", "KnownConfig", "dataset_fingerprint", "describe_dataset"]

PACKAGED_DIR = Path(__file__).with_name("build_descriptors")


@dataclass(frozen=True)
class KnownConfig:
    name: str
    dataset_config_sha256: str
    questions: dict[str, str]  # question_id -> category


@dataclass(frozen=True)
class KnownBuild:
    name: str
    configs: dict[str, KnownConfig]

    def to_dict(self) -> dict:
        return {"name": self.name,
                "configs": {c.name: {"dataset_config_sha256": c.dataset_config_sha256, "questions": c.questions}
                            for c in sorted(self.configs.values(), key=lambda c: c.name)}}

    @classmethod
    def from_dict(cls, data: dict) -> "KnownBuild":
        configs = {name: KnownConfig(name, str(v["dataset_config_sha256"]), dict(v["questions"]))
                   for name, v in data["configs"].items()}
        return cls(name=str(data["name"]), configs=configs)


def describe_dataset(dataset_dir: str | Path, name: str | None = None) -> KnownBuild:
    """A descriptor of a built dataset folder (``data/<config>/*.parquet``)."""
    import pyarrow.parquet as pq

    dataset_dir = Path(dataset_dir)
    configs: dict[str, KnownConfig] = {}
    for config_dir in sorted(p for p in (dataset_dir / "data").iterdir() if p.is_dir()):
        mapping: dict[str, str] = {}
        for path in sorted(config_dir.glob("*.parquet")):
            table = pq.read_table(path, columns=["question_id", "category"])
            mapping.update(zip(table.column("question_id").to_pylist(), table.column("category").to_pylist()))
        if mapping:
            configs[config_dir.name] = KnownConfig(config_dir.name, dataset_fingerprint(dataset_dir, config_dir.name),
                                                   mapping)
    if not configs:
        raise FileNotFoundError(f"{dataset_dir}: no data/<config>/*.parquet files")
    return KnownBuild(name=name or dataset_dir.resolve().name, configs=configs)


class KnownBuilds:
    """The registry: known dataset configs by fingerprint."""

    def __init__(self, builds: Iterable[KnownBuild] = ()):
        self.builds: list[KnownBuild] = []
        # one fingerprint may name several configs when their files are identical
        self.by_hash: dict[str, list[tuple[KnownBuild, KnownConfig]]] = {}
        for build in builds:
            self.add(build)

    def __len__(self) -> int:
        return len(self.builds)

    def add(self, build: KnownBuild) -> None:
        self.builds.append(build)
        for config in build.configs.values():
            self.by_hash.setdefault(config.dataset_config_sha256, []).append((build, config))

    @classmethod
    def load(cls, paths: Iterable[str | Path] | None = None) -> "KnownBuilds":
        """Descriptors from the packaged folder plus ``paths`` (default: ``SPEEDBENCH_KNOWN_BUILDS``)."""
        if paths is None:
            paths = settings.known_builds_paths()
        files: list[Path] = []
        for path in [PACKAGED_DIR, *map(Path, paths)]:
            files += sorted(path.glob("*.json")) if path.is_dir() else ([path] if path.is_file() else [])
        return cls(KnownBuild.from_dict(json.loads(f.read_text(encoding="utf-8"))) for f in files)

    def config_of(self, run_path: str, manifest_hash: str, config: str) -> tuple[KnownBuild, KnownConfig]:
        """The known build and config a run's manifest declares, or a rejection naming the manifest."""
        found = self.by_hash.get(manifest_hash)
        if found is None:
            raise BundleRejected(
                f"dataset_config_sha256 {shown(manifest_hash[:16])}... is not a known SPEED-Bench build; measure on a "
                "published build of the dataset", rule="build.unknown", where=f"{run_path}/manifest.json",
                field="dataset_config_sha256")
        matching = [(build, known) for build, known in found if known.name == config]
        if not matching:
            build, known = found[0]
            raise BundleRejected(
                f"dataset_config {shown(config)} does not match the dataset hash, which is config {known.name!r} of "
                f"build {build.name!r}", rule="build.config_mismatch", where=f"{run_path}/manifest.json",
                field="dataset_config")
        return matching[0]

    @staticmethod
    def check_question(where: str, build: KnownBuild, known: KnownConfig, question_id: str, category: str) -> None:
        """Reject a record that is not a row of the declared config (``where``: its file and line)."""
        expected = known.questions.get(question_id)
        if expected is None:
            raise BundleRejected(
                f"question_id {shown(question_id)} is not a row of {known.name!r} in build {build.name!r} (records do "
                "not match the declared dataset)", rule="build.unknown_question", where=where, field="question_id")
        if expected != category:
            raise BundleRejected(
                f"question_id {shown(question_id)} has category {shown(category)}, but the declared dataset says "
                f"{expected!r}", rule="build.category_mismatch", where=where, field="category")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the known-build descriptor of a built dataset folder.")
    parser.add_argument("dataset_dir")
    parser.add_argument("out")
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    build = describe_dataset(args.dataset_dir, args.name)
    Path(args.out).write_text(json.dumps(build.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for config in build.configs.values():
        print(f"{args.out}: {build.name} {config.name} {config.dataset_config_sha256} ({len(config.questions)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
