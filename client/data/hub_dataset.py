"""``--dataset ORG/NAME``: a dataset config on the Hugging Face Hub (e.g. ``nvidia/SPEED-Bench``), read
with ``datasets.load_dataset`` and written once as a dataset folder the rest of the client reads.

Offline by default: the config comes from the ``datasets`` cache (``HF_DATASETS_CACHE``), whatever
``HF_HUB_OFFLINE`` says, so a run never reaches the network unless asked; when it is not cached the
error gives the command that fetches it. ``online=True`` (``speedbench run --online``) lets
``datasets`` reach the Hub (``HF_ENDPOINT``; a gated repo takes ``HF_TOKEN``), which also fills the
cache for later offline runs. ``ORG/NAME@REVISION`` pins a branch, tag or commit.

The rows are written to ``<HF_DATASETS_CACHE>/speedbench-inputs/ORG--NAME/<config>/<key>/
data/<config>/test-00000-of-00001.parquet`` (``<key>`` hashes the ``datasets`` cache files, whose
path holds the commit, so a new revision gets a new folder), so the fingerprint, the manifest and
resume work as for a built folder.
The published dataset ships rows that must be resolved from their sources first: they are refused
here with their count and the ``speedbench resolve`` command, whose output ``--dataset`` then takes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SPLIT = "test"  # the published dataset's only split
INPUTS_DIR = "speedbench-inputs"
SOURCE_NOTE = "hub_source.json"  # beside data/: which Hub config the folder holds
_HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<revision>[\w./-]+))?$")


@dataclass(frozen=True)
class HubDatasetId:
    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "")


def parse_hub_id(value: str) -> HubDatasetId | None:
    """``ORG/NAME`` or ``ORG/NAME@REVISION`` that is not an existing local path, else None."""
    match = _HUB_ID.match(str(value))
    if match is None or Path(value).exists():
        return None
    return HubDatasetId(match["repo"], match["revision"])


def fetch_command(hub_id: HubDatasetId, config: str) -> str:
    """A command that puts the config in the ``datasets`` cache (what an offline run reads)."""
    revision = f", revision={hub_id.revision!r}" if hub_id.revision else ""
    return (f"HF_HUB_OFFLINE=0 HF_DATASETS_OFFLINE=0 python -c \"import datasets; datasets.load_dataset("
            f"'{hub_id.repo_id}', '{config}', split='{SPLIT}'{revision})\"")


@contextmanager
def _hub_access(online: bool):
    """``datasets`` and ``huggingface_hub`` offline (or online) for the duration, then as they were:
    both read the flag at call time from these module attributes."""
    import datasets.config
    from huggingface_hub import constants

    saved = datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = not online
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _load(hub_id: HubDatasetId, config: str, online: bool):
    import datasets

    from speedbench.client.data.workload import WorkloadError

    where = f"--dataset {hub_id} --config {config}"
    try:
        with _hub_access(online):
            return datasets.load_dataset(hub_id.repo_id, config, split=SPLIT, revision=hub_id.revision)
    except (ConnectionError, FileNotFoundError) as error:
        if online:
            raise WorkloadError(f"{where}: not read from the Hub at {_endpoint()} ({error}; a gated repo "
                                "takes HF_TOKEN)") from None
        raise WorkloadError(
            f"{where}: no local folder {str(hub_id)!r}, and not in the datasets cache "
            f"({datasets.config.HF_DATASETS_CACHE}) while the run is offline "
            f"({error}). Fetch it once with: {fetch_command(hub_id, config)} (or add --online to this "
            f"command); later runs read the cache offline") from None
    except ValueError as error:  # an unknown config or split: datasets names the ones there are
        hint = "" if online else f" (offline, only cached configs are known; fetch it with: {fetch_command(hub_id, config)})"
        raise WorkloadError(f"{where}: {error}{hint}") from None


def materialize(hub_id: HubDatasetId, config: str, online: bool = False) -> Path:
    """The folder holding ``data/<config>/`` of the Hub config (written on first use); placeholder
    rows are refused with the resolving command."""
    import datasets

    dataset = _load(hub_id, config, online)
    # keyed by the cache files (their path holds the commit): the same folder online and offline
    key = hashlib.sha256("\n".join(sorted(f["filename"] for f in dataset.cache_files)).encode()).hexdigest()[:16]
    folder = Path(datasets.config.HF_DATASETS_CACHE) / INPUTS_DIR / hub_id.repo_id.replace("/", "--") / config / key
    target = folder / "data" / config / f"{SPLIT}-00000-of-00001.parquet"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".parquet.{os.getpid()}.partial")  # two runs at once never share one
        dataset.to_parquet(str(partial))
        partial.replace(target)  # whole or absent: a killed run never leaves half a file
        note = {"repo_id": hub_id.repo_id, "revision": hub_id.revision, "config": config, "split": SPLIT,
                "num_rows": dataset.num_rows, "cache_files": [f["filename"] for f in dataset.cache_files]}
        (folder / SOURCE_NOTE).write_text(json.dumps(note, indent=1) + "\n")
    _refuse_placeholders(hub_id, config, folder, target)
    return folder


def hub_source(folder: str | Path) -> dict | None:
    """What a folder written by ``materialize`` holds (its ``hub_source.json``), else None: the run's
    manifest records it, so a run read from a Hub id names that id, not only the cache folder."""
    note = Path(folder) / SOURCE_NOTE
    if not note.is_file():
        return None
    data = json.loads(note.read_text())
    return {key: data.get(key) for key in ("repo_id", "revision", "config", "split", "num_rows")}


def _refuse_placeholders(hub_id: HubDatasetId, config: str, folder: Path, parquet: Path) -> None:
    import pyarrow.parquet as pq

    from speedbench.client.data.workload import WorkloadError, placeholder_rows, resolve_command

    handle = pq.ParquetFile(parquet)
    missing = [name for name in ("question_id", "category", "turns") if name not in handle.schema_arrow.names]
    if missing:  # not a SPEED-Bench config: say so before reading rows
        raise WorkloadError(f"--dataset {hub_id} --config {config}: the Hub config lacks field(s) "
                            f"{', '.join(missing)} (columns: {', '.join(handle.schema_arrow.names)}; "
                            f"written to {parquet})")
    rows = handle.read(columns=["question_id", "turns"]).to_pylist()
    marked = placeholder_rows(rows)
    if marked:
        index, turn = marked[0]
        out = Path.cwd() / f"{hub_id.repo_id.split('/')[1]}-resolved"
        raise WorkloadError(
            f"--dataset {hub_id} --config {config}: {len(marked)} of {len(rows)} rows are unresolved placeholders "
            f"(their turns start with the reference's placeholder sentence; first: row {index}, question_id "
            f"{rows[index].get('question_id')!r}, turn {turn + 1}); the published dataset must be resolved from "
            f"its sources first: {resolve_command(folder, config, parquet, out=out)}")
