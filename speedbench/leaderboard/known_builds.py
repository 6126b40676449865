"""The SPEED-Bench dataset builds a submission may declare, and the check that its records match.

A run's manifest names its dataset config and the hash of the dataset folder's manifest
(``dataset_manifest_sha256``). The leaderboard accepts only builds it knows: each is described
by a small JSON file (``describe_dataset`` writes one from a built dataset folder)::

    {"name": "...", "dataset_manifest_sha256": "<64 hex>",
     "configs": {"qualitative": {"questions": {"<question_id>": "<category>", ...}}, ...}}

Descriptors are read from this package's ``known_builds/`` folder and from the folders or
files listed in ``SPEEDBENCH_KNOWN_BUILDS`` (``os.pathsep``-separated).

Usage: ``python -m speedbench.leaderboard.known_builds DATASET_DIR OUT.json [--name NAME]``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from speedbench.leaderboard.schema import BundleRejected

PACKAGED_DIR = Path(__file__).with_name("known_builds")


@dataclass(frozen=True)
class KnownBuild:
    name: str
    dataset_manifest_sha256: str
    questions: dict[str, dict[str, str]]  # config -> {question_id: category}

    def to_dict(self) -> dict:
        return {"name": self.name, "dataset_manifest_sha256": self.dataset_manifest_sha256,
                "configs": {c: {"questions": q} for c, q in sorted(self.questions.items())}}

    @classmethod
    def from_dict(cls, data: dict) -> "KnownBuild":
        return cls(name=str(data["name"]), dataset_manifest_sha256=str(data["dataset_manifest_sha256"]),
                   questions={c: dict(v["questions"]) for c, v in data["configs"].items()})


def dataset_manifest_sha256(dataset_dir: str | Path) -> str:
    """The hash a run records for its dataset folder.

    Uses the client's own function when it is installed, so the two can never disagree;
    otherwise: sha256 of ``manifest.json``, or over the parquet files when there is none.
    """
    try:
        from speedbench.client.dataset import dataset_manifest_sha256 as client_hash  # type: ignore
    except ImportError:
        client_hash = None
    if client_hash is not None:
        return client_hash(Path(dataset_dir))
    dataset_dir = Path(dataset_dir)
    manifest = dataset_dir / "manifest.json"
    if manifest.is_file():
        return hashlib.sha256(manifest.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for path in sorted(dataset_dir.glob("data/*/*.parquet")):
        digest.update(path.relative_to(dataset_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def describe_dataset(dataset_dir: str | Path, name: str | None = None) -> KnownBuild:
    """A descriptor of a built dataset folder (``data/<config>/*.parquet``)."""
    import pyarrow.parquet as pq

    dataset_dir = Path(dataset_dir)
    questions: dict[str, dict[str, str]] = {}
    for config_dir in sorted(p for p in (dataset_dir / "data").iterdir() if p.is_dir()):
        mapping: dict[str, str] = {}
        for path in sorted(config_dir.glob("*.parquet")):
            table = pq.read_table(path, columns=["question_id", "category"])
            mapping.update(zip(table.column("question_id").to_pylist(), table.column("category").to_pylist()))
        if mapping:
            questions[config_dir.name] = mapping
    if not questions:
        raise FileNotFoundError(f"{dataset_dir}: no data/<config>/*.parquet files")
    return KnownBuild(name=name or dataset_dir.resolve().name,
                      dataset_manifest_sha256=dataset_manifest_sha256(dataset_dir), questions=questions)


class KnownBuilds:
    """The registry: builds by manifest hash."""

    def __init__(self, builds: Iterable[KnownBuild] = ()):
        self.by_hash: dict[str, KnownBuild] = {b.dataset_manifest_sha256: b for b in builds}

    def __len__(self) -> int:
        return len(self.by_hash)

    def add(self, build: KnownBuild) -> None:
        self.by_hash[build.dataset_manifest_sha256] = build

    @classmethod
    def load(cls, paths: Iterable[str | Path] | None = None) -> "KnownBuilds":
        """Descriptors from the packaged folder plus ``paths`` (default: ``SPEEDBENCH_KNOWN_BUILDS``)."""
        if paths is None:
            paths = [p for p in os.environ.get("SPEEDBENCH_KNOWN_BUILDS", "").split(os.pathsep) if p]
        files: list[Path] = []
        for path in [PACKAGED_DIR, *map(Path, paths)]:
            files += sorted(path.glob("*.json")) if path.is_dir() else ([path] if path.is_file() else [])
        return cls(KnownBuild.from_dict(json.loads(f.read_text(encoding="utf-8"))) for f in files)

    def check_run(self, run_path: str, manifest_hash: str, config: str,
                  records: Iterable[tuple[str, str]]) -> KnownBuild:
        """Reject a run whose dataset is unknown or whose records are not rows of that dataset.

        records: (question_id, category) of each measured request-turn.
        """
        build = self.by_hash.get(manifest_hash)
        if build is None:
            raise BundleRejected(
                f"{run_path}/manifest.json: dataset_manifest_sha256 {manifest_hash[:16]}... is not a known "
                "SPEED-Bench build; measure on a published build of the dataset")
        if config not in build.questions:
            raise BundleRejected(
                f"{run_path}/manifest.json: dataset_config {config!r} is not part of build {build.name!r} "
                f"(it has {', '.join(sorted(build.questions))})")
        rows = build.questions[config]
        for question_id, category in records:
            expected = rows.get(question_id)
            if expected is None:
                raise BundleRejected(
                    f"{run_path}/records.jsonl: question_id {question_id!r} is not a row of {config!r} "
                    f"in build {build.name!r} (records do not match the declared dataset)")
            if expected != category:
                raise BundleRejected(
                    f"{run_path}/records.jsonl: question_id {question_id!r} has category {category!r}, "
                    f"but the declared dataset says {expected!r}")
        return build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the known-build descriptor of a built dataset folder.")
    parser.add_argument("dataset_dir")
    parser.add_argument("out")
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    build = describe_dataset(args.dataset_dir, args.name)
    Path(args.out).write_text(json.dumps(build.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {build.name} {build.dataset_manifest_sha256} "
          f"({', '.join(f'{c}: {len(q)} rows' for c, q in build.questions.items())})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
