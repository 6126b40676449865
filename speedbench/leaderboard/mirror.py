"""The Hub dataset repo that is the board's store of record on a Space.

Enabled by ``SPEEDBENCH_HUB_MIRROR=<owner>/<dataset repo>`` (token from ``HF_TOKEN``). A Space's
disk is lost on restart unless persistent storage is bought, so the dataset repo holds the truth:

- ``bundles/<id>.tar.gz`` (or ``.zip``): the raw bundle, byte for byte;
- ``entries/<id>.json``: the entry document (:func:`entry_document`): dates, metadata, recomputed
  metrics, digests, trust level and the verification record.

Each accepted entry is written by ONE ``create_commit`` holding both files, so the repo never
holds half an entry; a verification rewrites the entry document in its own commit. Pushing and
restoring run in the background (:mod:`.sync`), never inside a request.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field

from speedbench import settings
from speedbench.leaderboard.store import Entry

ENTRY_DOC_VERSION = 2
ENTRIES, BUNDLES = "entries/", "bundles/"


SUFFIXES = (".tar.gz", ".zip")


def bundle_suffix(archive: bytes) -> str:
    return ".zip" if archive[:2] == b"PK" else ".tar.gz"


def entry_document(entry: Entry, measurement_sha256: str | None = None) -> dict:
    """What ``entries/<id>.json`` holds: everything about an entry the bundle itself cannot tell."""
    return {"doc_version": ENTRY_DOC_VERSION, "id": entry.id, "bundle_sha256": entry.bundle_sha256,
            "archive_sha256": entry.archive_sha256, "submitted_at": entry.submitted_at,
            "schema_version": entry.schema_version, "metadata": entry.metadata, "metrics": entry.metrics,
            "metrics_version": entry.metrics_version, "trust": entry.trust, "verification": entry.verification,
            "warnings": entry.warnings, "measurement_sha256": measurement_sha256}


@dataclass
class RepoListing:
    """Which entries the repo holds: their document and bundle paths (either may be missing)."""

    documents: dict[str, str] = field(default_factory=dict)  # entry id -> entries/<id>.json
    bundles: dict[str, str] = field(default_factory=dict)  # entry id -> bundles/<id>.<ext>

    @property
    def ids(self) -> set[str]:
        return set(self.documents) | set(self.bundles)


class HubMirror:
    """Reads and writes the dataset repo through ``huggingface_hub`` (``api``: an ``HfApi``)."""

    def __init__(self, repo_id: str, api=None, token: str | None = None):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=token)
        self.repo_id = repo_id
        self.api = api

    @classmethod
    def from_env(cls) -> "HubMirror | None":
        repo = settings.hub_mirror_repo()
        return cls(repo, token=settings.hf_token()) if repo else None

    def ensure_repo(self) -> None:
        self.api.create_repo(self.repo_id, repo_type="dataset", private=True, exist_ok=True)

    def push(self, document: dict, archive: bytes | None, stale: tuple[str, ...] = ()) -> None:
        """One atomic commit: the entry document, and the bundle when given (``stale``: bundle paths
        of the same entry under another suffix, deleted in the same commit)."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        entry_id = document["id"]
        operations = [CommitOperationAdd(path_in_repo=f"{ENTRIES}{entry_id}.json",
                                         path_or_fileobj=json.dumps(document, indent=1, sort_keys=True).encode())]
        if archive is not None:
            path = f"{BUNDLES}{entry_id}{bundle_suffix(archive)}"
            operations.insert(0, CommitOperationAdd(path_in_repo=path, path_or_fileobj=archive))
            operations += [CommitOperationDelete(path_in_repo=other) for other in stale if other != path]
        what = "entry" if archive is not None else f"entry {document.get('trust')}"
        self.api.create_commit(self.repo_id, operations, repo_type="dataset", commit_message=f"{what} {entry_id}")

    def listing(self) -> RepoListing:
        found = RepoListing()
        for name in self.api.list_repo_files(self.repo_id, repo_type="dataset"):
            base = name.rsplit("/", 1)[-1]
            entry_id = base.split(".", 1)[0]
            if name.startswith(ENTRIES) and name.endswith(".json"):
                found.documents[entry_id] = name
            elif name.startswith(BUNDLES) and base.endswith((".tar.gz", ".zip")):
                found.bundles[entry_id] = name
        return found

    def read(self, path: str) -> bytes:
        """One file's bytes at the repo's current revision (through a throw-away cache folder: the
        shared Hub cache would keep a copy of every bundle on the Space's disk)."""
        with tempfile.TemporaryDirectory(prefix="speedbench-mirror-") as cache:
            local = self.api.hf_hub_download(self.repo_id, path, repo_type="dataset", cache_dir=cache)
            with open(local, "rb") as handle:
                return handle.read()

    def _document(self, path: str) -> dict:
        document = json.loads(self.read(path))
        if not isinstance(document, dict):
            raise ValueError(f"{path} is not a JSON object")
        return document

    def hub_copy(self, entry_id: str) -> tuple[dict | None, tuple[str, ...]]:
        """(the entry document the repo holds for ``entry_id`` or None, the paths of its bundles): a
        new entry's id is in the repo already when its measurement was accepted there before (a
        Space restarted on an empty disk, sent the same bundle again before its restore)."""
        paths = [f"{ENTRIES}{entry_id}.json", *(f"{BUNDLES}{entry_id}{suffix}" for suffix in SUFFIXES)]
        found = {info.path for info in self.api.get_paths_info(self.repo_id, paths, repo_type="dataset")}
        document = self._document(paths[0]) if paths[0] in found else None
        return document, tuple(sorted(p for p in found if p.startswith(BUNDLES)))

    def read_entry(self, listing: RepoListing, entry_id: str) -> tuple[dict | None, bytes]:
        """(entry document or None, bundle bytes) of one entry; a document that is not a JSON object
        or a bundle whose hash is not the document's ``archive_sha256`` is a ValueError (a corrupted
        or replaced file)."""
        document = self._document(listing.documents[entry_id]) if entry_id in listing.documents else None
        archive = self.read(listing.bundles[entry_id])
        if document is not None and document.get("archive_sha256") not in (None, hashlib.sha256(archive).hexdigest()):
            raise ValueError(f"{listing.bundles[entry_id]}: sha256 differs from the entry document's archive_sha256")
        return document, archive
