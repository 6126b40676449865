"""Reading the reference sources from the Hugging Face Hub at a pinned revision (online builds only).

The adapters parse exactly the files the offline mirror holds; online, the same file is fetched
from the dataset repo the reference resolver uses. A revision given with ``--hub-revisions`` (or
in ``HubFile.revision``) is used as is; otherwise the current commit of ``main`` is resolved once
and recorded in ``manifest.json`` so a later build can pin it.
"""
from __future__ import annotations

from pathlib import Path

from speedbench import settings


def download_pinned(hub, relative: str, revision: str | None) -> tuple[Path, str]:
    """(local path of the Hub copy of mirror file ``relative``, the commit it was read at)."""
    from huggingface_hub import HfApi, hf_hub_download

    endpoint = settings.hub_endpoint()
    revision = revision or hub.revision
    if revision is None:
        revision = HfApi(endpoint=endpoint).dataset_info(hub.repo_id).sha
    local = hf_hub_download(hub.repo_id, hub.files[relative], repo_type="dataset", revision=revision,
                            endpoint=endpoint)
    return Path(local), revision
