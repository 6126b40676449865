"""Optional mirror of the store to a Hugging Face Hub dataset repo (off by default).

Enabled by ``SPEEDBENCH_HUB_MIRROR=<owner>/<dataset repo>`` (token from ``HF_TOKEN``). Each
accepted entry is pushed as ``bundles/<id>.tar.gz`` (the raw bundle, byte for byte; zip
uploads keep their ``.zip``) and ``entries/<id>.json`` (metadata and recomputed metrics), so a
fresh Space can rebuild its board from the repo with :meth:`HubMirror.restore`, which replays
every bundle through the normal validation (nothing is trusted because it came from the mirror).
"""
from __future__ import annotations

import json
import os

from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import Entry


def _suffix(archive: bytes) -> str:
    return ".zip" if archive[:2] == b"PK" else ".tar.gz"


class HubMirror:
    def __init__(self, repo_id: str, api=None, token: str | None = None):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=token)
        self.repo_id = repo_id
        self.api = api

    @classmethod
    def from_env(cls) -> "HubMirror | None":
        repo = os.environ.get("SPEEDBENCH_HUB_MIRROR", "").strip()
        return cls(repo, token=os.environ.get("HF_TOKEN")) if repo else None

    def push(self, entry: Entry, archive: bytes) -> None:
        document = {"id": entry.id, "bundle_sha256": entry.bundle_sha256, "archive_sha256": entry.archive_sha256,
                    "submitted_at": entry.submitted_at, "schema_version": entry.schema_version,
                    "metadata": entry.metadata, "metrics": entry.metrics, "metrics_version": entry.metrics_version}
        self.api.upload_file(path_or_fileobj=archive, path_in_repo=f"bundles/{entry.id}{_suffix(archive)}",
                             repo_id=self.repo_id, repo_type="dataset", commit_message=f"bundle {entry.id}")
        self.api.upload_file(path_or_fileobj=json.dumps(document, indent=1, sort_keys=True).encode("utf-8"),
                             path_in_repo=f"entries/{entry.id}.json", repo_id=self.repo_id, repo_type="dataset",
                             commit_message=f"entry {entry.id}")

    def restore(self, submit) -> tuple[int, list[str]]:
        """Replay every mirrored bundle through ``submit(archive_bytes, submitted_at)``.

        Returns (entries added, messages for bundles skipped: duplicates or now-invalid ones).
        """
        files = self.api.list_repo_files(self.repo_id, repo_type="dataset")
        dates: dict[str, str] = {}
        for name in files:
            if name.startswith("entries/") and name.endswith(".json"):
                path = self.api.hf_hub_download(self.repo_id, name, repo_type="dataset")
                with open(path, encoding="utf-8") as handle:
                    doc = json.load(handle)
                dates[str(doc.get("id"))] = str(doc.get("submitted_at"))
        added, skipped = 0, []
        for name in sorted(files):
            if not name.startswith("bundles/"):
                continue
            entry_id = name.split("/", 1)[1].split(".", 1)[0]
            path = self.api.hf_hub_download(self.repo_id, name, repo_type="dataset")
            with open(path, "rb") as handle:
                archive = handle.read()
            try:
                submit(archive, dates.get(entry_id))
                added += 1
            except BundleRejected as exc:
                skipped.append(f"{name}: {exc}")
        return added, skipped
