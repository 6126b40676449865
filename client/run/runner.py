"""A whole measurement run: the manifest, the sweep over load points, counters, resume, results.

``RUN_DIR`` receives ``manifest.json`` (``speedbench.records.RunManifest``), ``records.jsonl``
(``speedbench.records.TurnRecord`` per line), ``counters.jsonl`` (one line per load point:
Prometheus snapshots before and after its measured phase) and ``results.json``
(``speedbench.metrics.run_results``). Restarting the same command on the same ``RUN_DIR`` resumes:
the manifest must match (same engine, dataset, tokenizer and options), records already written
are kept, and only missing request-turns run. A load point whose requests were split across two
invocations keeps its records but its counter deltas are marked incomplete.
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import replace
from pathlib import Path

from speedbench.client.data.hub_dataset import hub_source
from speedbench.client.data.workload import (
    Conversation,
    dataset_fingerprint,
    dataset_manifest_hash,
    Selection,
    read_conversations,
    resolve_dataset,
    select,
    tokenize_first_turns,
)
from speedbench.client.engines import get_adapter
from speedbench.client.execution.phase import ClientSettings, PhaseSpec, record_key
from speedbench.client.execution.processes import done_maps, run_event_loop, run_phase_in_workers
from speedbench.client.load.shapes import poisson_offsets_ns
from speedbench.client.recording.writer import RECORDS_NAME, load_existing
from speedbench.client.run.counters import CounterSnapshot, scrape
from speedbench.client.run.options import RESUME_KEYS, RESUME_OPTIONS, RunConfigError, RunOptions
from speedbench.client.run.source_check import counter_warnings, request_stats_warnings
from speedbench.metrics.run_results import compute_results, read_counter_points
from speedbench.records import COUNTERS_NAME, MANIFEST_NAME, RESULTS_NAME, RunManifest, read_records


def _client_version() -> str:
    import speedbench

    return getattr(speedbench, "__version__", "unknown")


async def _fetch_request_stats(adapter) -> list | None:
    import aiohttp

    from speedbench.client.engines.base import get_json

    async with aiohttp.ClientSession() as session:
        return await get_json(session, adapter.url + adapter.perf_metrics_path)


def attach_request_stats(adapter, records_path: Path, draft_length: int | None) -> int:
    """Join the engine's separately served per-request statistics (TensorRT-LLM ``/perf_metrics``,
    emptied by every GET) onto the records they belong to; returns how many records got them.

    The records file is rewritten in one ``os.replace`` (old or new file, never half), after the
    phase's workers have finished writing.
    """
    import os

    if not adapter.perf_metrics_path:
        return 0
    entries = adapter.request_stats_by_id(run_event_loop(_fetch_request_stats(adapter)))
    if not entries:
        return 0
    records = list(read_records(records_path))
    joined = 0
    for record in records:
        entry = entries.get(record.response_id or "")
        if entry is None or not record.ok or (record.engine_stats and record.engine_stats.exact):
            continue
        chunk_steps = sum(1 for t in record.chunk_tokens[1:] if t > 0) if record.chunks_are_steps else 0
        stats = adapter.stats_from_request_entry(entry, record.output_tokens, draft_length, chunk_steps)
        if stats is not None:
            if record.engine_stats is not None:
                stats.raw["stream"] = record.engine_stats.raw  # the inexact in-stream proxy, kept
            record.engine_stats = stats
            joined += 1
    if joined:
        from speedbench.client.recording.writer import _encode

        temporary = records_path.with_suffix(".jsonl.tmp")
        temporary.write_bytes(b"".join(_encode(r.to_dict()) + b"\n" for r in records))
        os.replace(temporary, records_path)
    return joined


async def _describe_and_scrape(adapter, want_description: bool) -> tuple[dict | None, CounterSnapshot | None]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        description = await adapter.describe_server(session) if want_description else None
        snapshot = await scrape(session, adapter.url + adapter.metrics_path) if adapter.metrics_path else None
    return description, snapshot


def _check_resume(path: Path, manifest: RunManifest) -> None:
    old = json.loads(path.read_text())
    for key in RESUME_KEYS:
        if old.get(key) != getattr(manifest, key):
            raise RunConfigError(f"{path}: cannot resume, {key} differs (was {old.get(key)!r}, now "
                                 f"{getattr(manifest, key)!r}); use a new --out folder")
    for key in RESUME_OPTIONS:
        if (old.get("options") or {}).get(key) != manifest.options.get(key):
            raise RunConfigError(f"{path}: cannot resume, option {key} differs (was "
                                 f"{(old.get('options') or {}).get(key)!r}, now {manifest.options.get(key)!r})")


def execute_run(options: RunOptions, log=print) -> dict:
    """Run (or resume) the whole sweep; returns the results written to ``results.json``."""
    from speedbench.tokenization.target import load_tokenizer

    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    adapter_class = get_adapter(options.engine)
    adapter = adapter_class(options.url, options.sampling, options.model, options.extra_body, api=options.api)
    adapter.check_options()  # fails early on fields the engine would reject
    tokenizer = load_tokenizer(options.tokenizer, options.online, options.chat_template_kwargs)
    # Hub ids become local folders first; from here on --dataset and --tokenizer are those folders
    options = replace(options, dataset=str(resolve_dataset(options.dataset, options.config, options.online)),
                      tokenizer=str(tokenizer.folder))
    selected = select(read_conversations(options.dataset, options.config),
                      Selection(options.categories, options.per_category, options.limit), options.config)
    conversations = selected.rows
    if not conversations:
        raise RunConfigError(f"{options.dataset} config {options.config}: no rows to run")
    tokenize_first_turns(conversations, tokenizer, options.prompt_mode)

    description, snapshot = run_event_loop(_describe_and_scrape(adapter, True))
    baseline = options.draft_length == 0  # told there is no speculation: no source to miss
    for warning in [] if baseline else counter_warnings(options.engine, adapter.metrics_path, snapshot):
        log(f"warning: {warning}")
    _write_manifest(options, out, description, conversations, tokenizer, selected.summary)

    records_path = out / RECORDS_NAME
    settings = options.client_settings()
    existing = load_existing(records_path)
    done, done_ids = done_maps(existing)
    progress = _progress_bar(options, conversations, existing)
    stats_checked = False
    pool = _ray_pool(options, log)
    try:
        for point, concurrency, rate in options.points():
            keys = [record_key(point, c.question_id, t) for c in conversations for t in range(len(c.turns))]
            missing = [k for k in keys if k not in done]
            if not missing:
                continue
            _run_warmup(options, settings, adapter, point, concurrency, rate, conversations, done)
            _measure_point(options, settings, adapter, point, concurrency, rate, conversations, done,
                           resumed=len(missing) < len(keys), progress=progress, done_ids=done_ids, pool=pool)
            if not stats_checked and not baseline:  # once, from the first phase that produced responses
                stats_checked = True
                for warning in request_stats_warnings(options.engine, [
                        r for r in read_records(records_path) if r.run_point == point]):
                    log(f"warning: {warning}")
            if progress is not None and options.workers > 1 and pool is None:
                progress.update(len(missing))
    finally:
        if progress is not None:
            progress.close()
        if pool is not None:
            pool.close()
    results = compute_results(out, options.agreement_tolerance, options.num_resamples, options.draft_length)
    (out / RESULTS_NAME).write_text(json.dumps(results, indent=2, allow_nan=False) + "\n")
    return results


def _progress_bar(options: RunOptions, conversations, existing: dict):
    if not options.progress:
        return None
    from tqdm import tqdm

    total_turns = sum(len(c.turns) for c in conversations)
    return tqdm(total=total_turns * len(options.points()), unit="req", desc="speedbench run",
                initial=sum(1 for r in existing.values() if not r.warmup), leave=False)


def _ray_pool(options: RunOptions, log):
    """``--ray``: the actors, joined, placed and their clocks probed before any request; else None."""
    if not options.ray:
        return None
    from speedbench.client.execution.ray_pool import RayWorkerPool

    return RayWorkerPool(options.ray, options.workers, options.tokenizer, options.out, log)


def _write_manifest(options: RunOptions, out: Path, description: dict, conversations, tokenizer,
                    selection: dict | None = None) -> None:
    manifest = RunManifest(
        engine=options.engine, url=options.url, model_id=description.get("model_id"),
        engine_version=description.get("engine_version"), server=description,
        dataset_dir=str(Path(options.dataset).resolve()), dataset_config=options.config,
        dataset_config_sha256=dataset_fingerprint(options.dataset, options.config),
        dataset_manifest_sha256=dataset_manifest_hash(options.dataset),
        num_rows=len(conversations), tokenizer_path=str(Path(options.tokenizer).resolve()),
        tokenizer_sha256=tokenizer.sha256, chat_template=tokenizer.has_chat_template,
        prompt_mode=options.prompt_mode, client_version=_client_version(),
        # what the subset options took (rows per category, partial) and the Hub model --tokenizer named
        options={**options.manifest_options(), "selection": selection, "tokenizer_source": tokenizer.source},
        python_version=platform.python_version(), created_unix_s=time.time(),
        dataset_source=hub_source(options.dataset))
    manifest_path = out / MANIFEST_NAME
    old: dict = {}
    if manifest_path.exists():
        _check_resume(manifest_path, manifest)
        old = json.loads(manifest_path.read_text())
        manifest.created_unix_s = old.get("created_unix_s", manifest.created_unix_s)
    data = manifest.to_dict()
    if "clock_offsets" in old:  # --ray workers' clocks of earlier invocations
        data["clock_offsets"] = old["clock_offsets"]
    manifest_path.write_text(json.dumps(data, indent=2) + "\n")


def _run_warmup(options: RunOptions, settings: ClientSettings, adapter, point: str, concurrency, rate,
                conversations, done: dict) -> None:
    """The point's warmup requests (first turns only), unless they already ran."""
    if options.warmup <= 0:
        return
    warm = conversations[: options.warmup]
    if all(record_key(point, c.question_id, 0, warmup=True) in done for c in warm):
        return
    warm_single = [Conversation(c.question_id, c.category, c.sub_category, c.turns[:1], c.first_prompt_ids)
                   for c in warm]
    phase = PhaseSpec(point, "closed", concurrency or len(warm), rate, True, 0,
                      slots=min(concurrency or len(warm), len(warm)), done=done)
    run_phase_in_workers(settings, phase, warm_single, 1)
    attach_request_stats(adapter, Path(settings.records_path), options.draft_length)


def _measure_point(options: RunOptions, settings: ClientSettings, adapter, point: str, concurrency, rate,
                   conversations, done: dict, resumed: bool, progress, done_ids: dict | None = None,
                   pool=None) -> None:
    """The point's measured phase between two counter scrapes (appended to ``counters.jsonl``)."""
    _, before = run_event_loop(_describe_and_scrape(adapter, False))
    todo = [c for c in conversations
            if any(record_key(point, c.question_id, t) not in done for t in range(len(c.turns)))]
    offsets = poisson_offsets_ns(len(todo), rate, options.arrival_seed) if rate else None
    phase = PhaseSpec(point, options.load_shape, concurrency, rate, False, 0,
                      slots=concurrency or 1, arrival_offsets_ns=offsets, done=done, done_ids=done_ids or {})
    log_start = time.time()
    reran = 0  # conversations rerun after a Ray worker died: the counters saw their lost attempts too
    try:
        if pool is not None:
            reran = pool.run_phase(settings, phase, todo, progress)
        else:
            run_phase_in_workers(settings, phase, todo, options.workers, progress)
    finally:
        _, after = run_event_loop(_describe_and_scrape(adapter, False))
        attach_request_stats(adapter, Path(settings.records_path), options.draft_length)
        with open(Path(options.out) / COUNTERS_NAME, "a") as handle:
            handle.write(json.dumps({
                "run_point": point, "complete": not resumed and not reran, "unix_s": log_start,
                "before": before.to_dict() if before else None,
                "after": after.to_dict() if after else None}) + "\n")
