"""Publish the dataset folder to the Hugging Face Hub (``speedbench build --push REPO_ID``).

Creates the dataset repo if needed, then uploads the whole folder (parquet files, README.md card,
manifest.json, reports/) in one commit with ``HfApi.upload_folder``. The endpoint comes from
``HF_ENDPOINT`` (tests point it at a local stand-in) and the token from the usual
huggingface_hub sources (``HF_TOKEN``, ``hf auth login``).
"""
from __future__ import annotations

from pathlib import Path

from speedbench import settings


def push_dataset(folder: Path, repo_id: str, token: str | None = None, private: bool = False,
                 endpoint: str | None = None, commit_message: str | None = None) -> str:
    """Upload ``folder`` to the dataset repo ``repo_id``; returns the commit URL."""
    from huggingface_hub import HfApi, constants

    folder = Path(folder)
    if not (folder / "README.md").is_file() or not (folder / "data").is_dir():
        raise ValueError(f"{folder}: not a built dataset folder (README.md and data/ expected); run speedbench build first")
    if constants.HF_HUB_OFFLINE:
        raise RuntimeError("cannot push with HF_HUB_OFFLINE=1 set; unset it to publish")
    api = HfApi(endpoint=endpoint or settings.hub_endpoint(), token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
        commit_message=commit_message or f"speedbench build: {', '.join(sorted(p.name for p in (folder / 'data').iterdir()))}",
        ignore_patterns=["*.tmp", ".cache/**"],
    )
    return str(getattr(commit, "commit_url", commit))
