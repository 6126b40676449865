"""``manifest.json``: what a run measured with, written before the first request; the resume check.

A rerun of the same command on the same folder resumes only when the manifest's identity fields
(``RESUME_KEYS``: engine, server, dataset config and its hash, tokenizer hash, prompt mode) and
the options declared ``resume`` (``RESUME_OPTIONS``) are unchanged; other options (``--workers``,
timeouts) may change between invocations. The first invocation's creation time and the Ray
workers' clock estimates of every invocation are kept.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from speedbench.client.data.hub_dataset import hub_source
from speedbench.client.data.workload import dataset_fingerprint, dataset_manifest_hash
from speedbench.client.run.options import RESUME_KEYS, RESUME_OPTIONS, RunConfigError, RunOptions
from speedbench.records import MANIFEST_NAME, RunManifest


def client_version() -> str:
    import speedbench

    return getattr(speedbench, "__version__", "unknown")


def default_options() -> dict:
    """The recorded options of a run given no optional flag: what a run made by an older speedbench,
    before an option existed, ran with; its manifest lacks that key and is compared with this."""
    return RunOptions(engine="", url="", tokenizer="", dataset="", config="", out="").manifest_options()


def planned_turns(conversations) -> dict[str, int]:
    """Request-turns each load point plans, per category (what coverage divides by,
    ``speedbench.metrics.coverage``)."""
    planned: dict[str, int] = {}
    for conversation in conversations:
        planned[conversation.category] = planned.get(conversation.category, 0) + len(conversation.turns)
    return dict(sorted(planned.items()))


def check_resume(path: Path, manifest: RunManifest) -> None:
    """Raise ``RunConfigError`` naming the first field or option that differs from ``path``'s."""
    old = json.loads(path.read_text())
    for key in RESUME_KEYS:
        if old.get(key) != getattr(manifest, key):
            raise RunConfigError(f"{path}: cannot resume, {key} differs (was {old.get(key)!r}, now "
                                 f"{getattr(manifest, key)!r}); use a new --out folder")
    old_options, defaults = old.get("options") or {}, default_options()
    for key in RESUME_OPTIONS:
        was = old_options[key] if key in old_options else defaults.get(key)
        if isinstance(was, dict) and isinstance(defaults.get(key), dict):
            was = {**defaults[key], **was}  # a nested option added since (sampling.seed_per_prompt): its default
        if was != manifest.options.get(key):
            raise RunConfigError(f"{path}: cannot resume, option {key} differs (was "
                                 f"{was!r}, now {manifest.options.get(key)!r})")


def write_manifest(options: RunOptions, description: dict, conversations, tokenizer,
                   selection: dict | None = None) -> None:
    """Write (or, on resume, check and rewrite) ``manifest.json`` in ``options.out``."""
    manifest = RunManifest(
        engine=options.engine, url=options.url, model_id=description.get("model_id"),
        engine_version=description.get("engine_version"), server=description,
        dataset_dir=str(Path(options.dataset).resolve()), dataset_config=options.config,
        dataset_config_sha256=dataset_fingerprint(options.dataset, options.config),
        dataset_manifest_sha256=dataset_manifest_hash(options.dataset),
        num_rows=len(conversations), tokenizer_path=str(Path(options.tokenizer).resolve()),
        tokenizer_sha256=tokenizer.sha256, chat_template=tokenizer.has_chat_template,
        prompt_mode=options.prompt_mode, client_version=client_version(),
        # what the subset options took (rows per category, partial) and the Hub model --tokenizer named
        options={**options.manifest_options(), "selection": selection, "tokenizer_source": tokenizer.source,
                 "planned_turns": planned_turns(conversations)},
        python_version=platform.python_version(), created_unix_s=time.time(),
        dataset_source=hub_source(options.dataset))
    manifest_path = Path(options.out) / MANIFEST_NAME
    old: dict = {}
    if manifest_path.exists():
        check_resume(manifest_path, manifest)
        old = json.loads(manifest_path.read_text())
        manifest.created_unix_s = old.get("created_unix_s", manifest.created_unix_s)
    data = manifest.to_dict()
    if "clock_offsets" in old:  # --ray workers' clocks of earlier invocations
        data["clock_offsets"] = old["clock_offsets"]
    manifest_path.write_text(json.dumps(data, indent=2) + "\n")
