"""A whole measurement run: prepare, then the sweep over load points, then results.

``RUN_DIR`` receives ``manifest.json`` (``speedbench.records.RunManifest``, written by
``run.manifest``), ``records.jsonl`` (``speedbench.records.TurnRecord`` per line), ``counters.jsonl``
(one line per load point: Prometheus snapshots before and after its measured phase) and
``results.json`` (``speedbench.analysis.run_results``). Restarting the same command on the same
``RUN_DIR`` resumes: the manifest must match (``run.manifest.check_resume``), records already
written are kept, and only missing request-turns run. A load point whose requests were split
across two invocations keeps its records but its counter deltas are marked incomplete.

Who sends the requests (this process, ``--workers`` processes, ``--ray`` actors) is the
executor's business (``speedbench.client.execution.executor``); this module only hands it phases.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from speedbench.client.data.workload import (
    Conversation,
    Selection,
    read_conversations,
    resolve_dataset,
    select,
    tokenize_first_turns,
)
from speedbench.client.engines import get_adapter
from speedbench.client.execution.executor import Executor, make_executor
from speedbench.client.execution.phase import ClientSettings, PhaseSpec, record_key
from speedbench.client.execution.processes import LocalExecutor, done_maps, run_event_loop
from speedbench.client.load.shapes import poisson_offsets_ns
from speedbench.client.recording.writer import load_history
from speedbench.client.run.counters import describe_and_scrape
from speedbench.client.run.manifest import write_manifest
from speedbench.client.run.options import RunConfigError, RunOptions
from speedbench.client.run.perf_metrics import attach_request_stats
from speedbench.client.run.retry import forget, retry_keys
from speedbench.client.run.source_check import counter_warnings, request_stats_warnings
from speedbench.analysis.run_results import compute_results
from speedbench.records import COUNTERS_NAME, RESULTS_NAME, read_records


@dataclass
class _Run:
    """What the sweep needs, prepared once: options with Hub ids resolved, the adapter, the rows."""

    options: RunOptions
    adapter: object
    conversations: list[Conversation]
    settings: ClientSettings
    done: dict
    done_ids: dict
    baseline: bool  # told there is no speculation (--draft-length 0): no acceptance source to miss
    supersedes: dict = field(default_factory=dict)  # --retry-errors: key -> records of it already written


def execute_run(options: RunOptions, log=print) -> dict:
    """Run (or resume) the whole sweep; returns the results written to ``results.json``."""
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    run = _prepare(options, log)
    options = run.options
    existing, history = load_history(run.settings.records_path)
    run.done, run.done_ids = done_maps(existing)
    if options.retry_errors:
        run.supersedes = _retry(run, existing, history, log)
    progress = _progress_bar(options, run.conversations, existing, len(run.supersedes))
    executor = make_executor(options.workers, options.ray, options.tokenizer, options.out, log)
    try:
        _sweep(run, executor, progress, log)
    finally:
        if progress is not None:
            progress.close()
        executor.close()
    results = compute_results(out, options.agreement_tolerance, options.num_resamples, options.draft_length)
    (out / RESULTS_NAME).write_text(json.dumps(results, indent=2, allow_nan=False) + "\n")
    return results


def _prepare(options: RunOptions, log) -> _Run:
    """Adapter, tokenizer and rows; the first scrape's warnings; ``manifest.json`` (checked on resume)."""
    from speedbench.tokenization.target import load_tokenizer

    adapter = get_adapter(options.engine)(options.url, options.sampling, options.model, options.extra_body,
                                          api=options.api)
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
    description, snapshot = run_event_loop(describe_and_scrape(adapter, True))
    baseline = options.draft_length == 0
    for warning in [] if baseline else counter_warnings(options.engine, adapter.metrics_path, snapshot):
        log(f"warning: {warning}")
    write_manifest(options, description, conversations, tokenizer, selected.summary)
    return _Run(options, adapter, conversations, options.client_settings(), {}, {}, baseline)


def _sweep(run: _Run, executor: Executor, progress, log) -> None:
    """Every load point with a missing request-turn: its warmup, then its measured phase."""
    stats_checked = run.baseline
    for point, concurrency, rate in run.options.points():
        keys = [record_key(point, c.question_id, t) for c in run.conversations for t in range(len(c.turns))]
        missing = [k for k in keys if k not in run.done]
        if not missing:
            continue
        _run_warmup(run, point, concurrency, rate)
        _measure_point(run, executor, point, concurrency, rate, resumed=len(missing) < len(keys), progress=progress)
        if not stats_checked:  # once, from the first phase that produced responses
            stats_checked = True
            records = [r for r in read_records(run.settings.records_path) if r.run_point == point]
            for warning in request_stats_warnings(run.options.engine, records):
                log(f"warning: {warning}")


def _retry(run: _Run, existing: dict, history: dict, log) -> dict[str, int]:
    """--retry-errors: the request-turns to measure again (client/run/retry.py), dropped from the done
    maps; returns what each rerun writes in ``supersedes`` (the records of its key so far)."""
    keys = retry_keys(existing, run.options.retry_kinds)
    forget(run.done, run.done_ids, keys)
    if keys:
        log(f"--retry-errors: running {len(keys)} failed request-turn(s) again "
            f"({', '.join(run.options.retry_kinds)} and the turns they blocked)")
    return {key: history[key] for key in keys}


def _progress_bar(options: RunOptions, conversations, existing: dict, rerun: int = 0):
    if not options.progress:
        return None
    from tqdm import tqdm

    total_turns = sum(len(c.turns) for c in conversations)
    return tqdm(total=total_turns * len(options.points()), unit="req", desc="speedbench run",
                initial=sum(1 for r in existing.values() if not r.warmup) - rerun, leave=False)


def _run_warmup(run: _Run, point: str, concurrency, rate) -> None:
    """The point's warmup requests (first turns only), unless they already ran. They run in this
    process whatever the executor (also with --ray): they warm the server, not the workers."""
    options = run.options
    if options.warmup <= 0:
        return
    warm = run.conversations[: options.warmup]
    if all(record_key(point, c.question_id, 0, warmup=True) in run.done for c in warm):
        return
    warm_single = [Conversation(c.question_id, c.category, c.sub_category, c.turns[:1], c.first_prompt_ids)
                   for c in warm]
    phase = PhaseSpec(point, "closed", concurrency or len(warm), rate, True, 0,
                      slots=min(concurrency or len(warm), len(warm)), done=run.done)
    LocalExecutor(1).run_phase(run.settings, phase, warm_single)
    attach_request_stats(run.adapter, Path(run.settings.records_path), options.draft_length)


def _measure_point(run: _Run, executor: Executor, point: str, concurrency, rate, resumed: bool,
                   progress) -> None:
    """The point's measured phase between two counter scrapes (appended to ``counters.jsonl``)."""
    options = run.options
    _, before = run_event_loop(describe_and_scrape(run.adapter, False))
    todo = [c for c in run.conversations
            if any(record_key(point, c.question_id, t) not in run.done for t in range(len(c.turns)))]
    offsets = poisson_offsets_ns(len(todo), rate, options.arrival_seed) if rate else None
    phase = PhaseSpec(point, options.load_shape, concurrency, rate, False, 0, slots=concurrency or 1,
                      arrival_offsets_ns=offsets, done=run.done, done_ids=run.done_ids, supersedes=run.supersedes)
    log_start = time.time()
    reran = 0  # conversations rerun after a worker was lost: the counters saw their lost attempts too
    try:
        reran = executor.run_phase(run.settings, phase, todo, progress)
    finally:
        _, after = run_event_loop(describe_and_scrape(run.adapter, False))
        attach_request_stats(run.adapter, Path(run.settings.records_path), options.draft_length)
        with open(Path(options.out) / COUNTERS_NAME, "a") as handle:
            handle.write(json.dumps({
                "run_point": point, "complete": not resumed and not reran, "unix_s": log_start,
                "before": before.to_dict() if before else None,
                "after": after.to_dict() if after else None}) + "\n")
