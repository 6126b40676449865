"""The Hub dataset repo that is the board's store of record on a Space.

Enabled by ``SPEEDBENCH_HUB_MIRROR=<owner>/<dataset repo>`` (token from ``HF_TOKEN``). A Space's
disk is lost on restart unless persistent storage is bought, so the dataset repo holds the truth:

- ``bundles/<id>.tar.gz`` (or ``.zip``): the raw bundle, byte for byte;
- ``entries/<id>.json``: the entry document (:func:`entry_document`): dates, metadata, recomputed
  metrics, digests, trust level and the verification record;
- ``verifications/<id>.tar.gz`` (or ``.zip``): a verified entry's verification runs, packed as a
  bundle (:mod:`.verify`), which a restore re-checks before it shows the entry as verified.

Each accepted entry is written by ONE ``create_commit`` holding both files, so the repo never
holds half an entry; a verification rewrites the entry document in its own commit, with its runs. Pushing and
restoring run in the background (:mod:`.sync`), never inside a request.
"""
from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass, field

from speedbench import settings
from speedbench.leaderboard.store import Entry

ENTRY_DOC_VERSION = 2
ENTRIES, BUNDLES, VERIFICATIONS = "entries/", "bundles/", "verifications/"


SUFFIXES = (".tar.gz", ".zip")
# The only entry ids the board issues (``store.entry_id_for``): anything else in the repo was not
# written by the board and is skipped before any of it is read.
ENTRY_ID = re.compile(r"sb-[0-9a-f]{12}")
# Size caps checked against the repo's listing before a file is downloaded or parsed: a document
# is a few hundred KiB (metrics, up to 100 listed divergences per pair), a bundle passed the upload
# cap (``SPEEDBENCH_MAX_BUNDLE_MB``) once.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024


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
    verifications: dict[str, str] = field(default_factory=dict)  # entry id -> verifications/<id>.<ext>
    sizes: dict[str, int] = field(default_factory=dict)  # path -> bytes, as the repo lists them
    foreign: list[str] = field(default_factory=list)  # entry-like paths whose name is not a board id

    @property
    def ids(self) -> set[str]:
        return set(self.documents) | set(self.bundles)


class HubMirror:
    """Reads and writes the dataset repo through ``huggingface_hub`` (``api``: an ``HfApi``)."""

    def __init__(self, repo_id: str, api=None, token: str | None = None, max_bundle_bytes: int | None = None):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=token)
        self.repo_id = repo_id
        self.api = api
        self.max_bundle_bytes = max_bundle_bytes or int(settings.leaderboard_limit("SPEEDBENCH_MAX_BUNDLE_MB", 64) * 2**20)

    @classmethod
    def from_env(cls) -> "HubMirror | None":
        repo = settings.hub_mirror_repo()
        return cls(repo, token=settings.hf_token()) if repo else None

    def ensure_repo(self) -> None:
        self.api.create_repo(self.repo_id, repo_type="dataset", private=True, exist_ok=True)

    def push(self, document: dict, archive: bytes | None, stale: tuple[str, ...] = (),
             verification_runs: bytes | None = None) -> None:
        """One atomic commit: the entry document, the bundle when given (``stale``: bundle paths
        of the same entry under another suffix, deleted in the same commit) and the verification's
        packed runs when given."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        entry_id = document["id"]
        operations = [CommitOperationAdd(path_in_repo=f"{ENTRIES}{entry_id}.json",
                                         path_or_fileobj=json.dumps(document, indent=1, sort_keys=True).encode())]
        if archive is not None:
            path = f"{BUNDLES}{entry_id}{bundle_suffix(archive)}"
            operations.insert(0, CommitOperationAdd(path_in_repo=path, path_or_fileobj=archive))
            operations += [CommitOperationDelete(path_in_repo=other) for other in stale if other != path]
        if verification_runs is not None:
            operations.append(CommitOperationAdd(path_in_repo=f"{VERIFICATIONS}{entry_id}{bundle_suffix(verification_runs)}",
                                                 path_or_fileobj=verification_runs))
        what = "entry" if archive is not None else f"entry {document.get('trust')}"
        self.api.create_commit(self.repo_id, operations, repo_type="dataset", commit_message=f"{what} {entry_id}")

    def listing(self) -> RepoListing:
        """The repo's entries with each file's size (one recursive tree listing); a path under
        ``entries/`` or ``bundles/`` whose name is not a board id is listed in ``foreign``."""
        found = RepoListing()
        for info in self.api.list_repo_tree(self.repo_id, repo_type="dataset", recursive=True):
            name, size = info.path, getattr(info, "size", None)
            if size is None or not name.startswith((ENTRIES, BUNDLES, VERIFICATIONS)):
                continue  # a folder, or a file outside the board's layout
            base = name.rsplit("/", 1)[-1]
            entry_id = base.split(".", 1)[0]
            is_document = name.startswith(ENTRIES) and base == f"{entry_id}.json"
            is_archive = not name.startswith(ENTRIES) and base in (f"{entry_id}{s}" for s in SUFFIXES)
            if not (is_document or is_archive) or not ENTRY_ID.fullmatch(entry_id):
                found.foreign.append(name)
                continue
            kind = found.verifications if name.startswith(VERIFICATIONS) else found.bundles
            (found.documents if is_document else kind)[entry_id] = name
            found.sizes[name] = int(size)
        return found

    def read(self, path: str) -> bytes:
        """One file's bytes at the repo's current revision (through a throw-away cache folder: the
        shared Hub cache would keep a copy of every bundle on the Space's disk)."""
        with tempfile.TemporaryDirectory(prefix="speedbench-mirror-") as cache:
            local = self.api.hf_hub_download(self.repo_id, path, repo_type="dataset", cache_dir=cache)
            with open(local, "rb") as handle:
                return handle.read()

    def _document(self, path: str, size: int | None = None) -> dict:
        """An entry document, its size checked before it is read (``size`` from the listing) and
        after, parsed strictly (nesting, numbers, duplicate keys: :mod:`.strict_json`)."""
        from speedbench.leaderboard.strict_json import loads_strict

        if size is not None and size > MAX_DOCUMENT_BYTES:
            raise ValueError(f"{path} is {size} bytes, over the {MAX_DOCUMENT_BYTES}-byte cap of an entry document")
        data = self.read(path)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"{path} is {len(data)} bytes, over the {MAX_DOCUMENT_BYTES}-byte cap of an entry document")
        document = loads_strict(data, path)
        if not isinstance(document, dict):
            raise ValueError(f"{path} is not a JSON object")
        return document

    def hub_copy(self, entry_id: str) -> tuple[dict | None, tuple[str, ...]]:
        """(the entry document the repo holds for ``entry_id`` or None, the paths of its bundles): a
        new entry's id is in the repo already when its measurement was accepted there before (a
        Space restarted on an empty disk, sent the same bundle again before its restore)."""
        paths = [f"{ENTRIES}{entry_id}.json", *(f"{BUNDLES}{entry_id}{suffix}" for suffix in SUFFIXES)]
        infos = {info.path: getattr(info, "size", None) for info in
                 self.api.get_paths_info(self.repo_id, paths, repo_type="dataset")}
        document = self._document(paths[0], infos[paths[0]]) if paths[0] in infos else None
        return document, tuple(sorted(p for p in infos if p.startswith(BUNDLES)))

    def read_entry(self, listing: RepoListing, entry_id: str) -> tuple[dict | None, bytes]:
        """(entry document or None, bundle bytes) of one entry; a document that is not a JSON object
        or a bundle whose hash is not the document's ``archive_sha256`` is a ValueError (a corrupted
        or replaced file)."""
        path = listing.documents.get(entry_id)
        document = self._document(path, listing.sizes.get(path)) if path else None
        bundle = listing.bundles[entry_id]
        archive = self._archive(bundle, listing.sizes.get(bundle, 0))
        if document is not None and document.get("archive_sha256") not in (None, hashlib.sha256(archive).hexdigest()):
            raise ValueError(f"{listing.bundles[entry_id]}: sha256 differs from the entry document's archive_sha256")
        return document, archive

    def _archive(self, path: str, listed: int) -> bytes:
        """A bundle's bytes, held to the upload cap before (the listed size) and after the download."""
        if listed > self.max_bundle_bytes:
            raise ValueError(f"{path} is {listed} bytes, over the upload cap of {self.max_bundle_bytes} bytes")
        data = self.read(path)
        if len(data) > self.max_bundle_bytes:
            raise ValueError(f"{path} is {len(data)} bytes, over the upload cap of {self.max_bundle_bytes} bytes")
        return data

    def read_verification(self, listing: RepoListing, entry_id: str) -> bytes | None:
        """The packed runs of the entry's verification, if the repo holds them (same caps as a bundle)."""
        path = listing.verifications.get(entry_id)
        return self._archive(path, listing.sizes.get(path, 0)) if path else None
